"""What the generators of committed files share: the diff that shows a stale copy, and the
`--write` / `--check` command line (`crdgen` for the CRDs, `docgen` for the pages made from
the same models), so `make crds` and `make verify-crds` behave alike for both."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def committed_diff(name: Path | str, current: str, wanted: str) -> str:
    """A unified diff of a committed file against the generated text; empty when equal."""
    return "".join(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            wanted.splitlines(keepends=True),
            fromfile=f"{name} (committed)",
            tofile=f"{name} (generated)",
        )
    )


def stale_files(wanted: Mapping[Path, str]) -> str:
    """A unified diff of each file against the text generated for it; empty when all are
    current (a missing file counts as empty)."""
    diffs = []
    for path, text in wanted.items():
        current = path.read_text() if path.exists() else ""
        if current != text:
            diffs.append(committed_diff(path, current, text))
    return "".join(diffs)


def write_files(wanted: Mapping[Path, str]) -> None:
    """Write each generated file where it lives, saying so."""
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")


@dataclass(frozen=True)
class Generator:
    """One generator of committed files: what it calls them, how it makes them (`wanted`:
    each file's path under the repository root and its generated text) and what `--check`
    says. Each tool supplies these; the command line and the diff are the same for all."""

    prog: str
    files: str
    wanted: Callable[[Path], Mapping[Path, str]]
    stale_message: str
    current_message: str

    def stale(self, repo_root: Path) -> str:
        """A unified diff of each committed file against its generated text; empty when all
        are current."""
        return stale_files(self.wanted(repo_root))

    def main(self, argv: Sequence[str] | None = None) -> int:
        """CLI: --write regenerates the files, --check exits 1 with the diff when they drifted."""
        parser = argparse.ArgumentParser(prog=self.prog)
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--write", action="store_true", help=f"write the {self.files}")
        mode.add_argument("--check", action="store_true", help=f"fail if the {self.files} drifted")
        parser.add_argument("--repo-root", type=Path, default=REPO_ROOT)
        args = parser.parse_args(argv)
        if args.write:
            write_files(self.wanted(args.repo_root))
            return 0
        diff = self.stale(args.repo_root)
        if diff:
            sys.stdout.write(diff)
            print(self.stale_message)
            return 1
        print(self.current_message)
        return 0
