"""What the generators of committed files share: the diff that shows a stale copy, and the
`--write` / `--check` command line (`crdgen` for the CRDs, `docgen` for the pages made from
the same models), so `make crds` and `make verify-crds` behave alike for both."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence
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


def generator_main(
    argv: Sequence[str] | None,
    *,
    prog: str,
    files: str,
    write: Callable[[Path], None],
    stale: Callable[[Path], str],
    stale_message: str,
    current_message: str,
) -> int:
    """CLI: --write regenerates the `files` (`write`), --check exits 1 with the diff
    (`stale`, empty when current) when they drifted."""
    parser = argparse.ArgumentParser(prog=prog)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help=f"write the {files}")
    mode.add_argument("--check", action="store_true", help=f"fail if the {files} drifted")
    parser.add_argument("--repo-root", type=Path, default=REPO_ROOT)
    args = parser.parse_args(argv)
    if args.write:
        write(args.repo_root)
        return 0
    diff = stale(args.repo_root)
    if diff:
        sys.stdout.write(diff)
        print(stale_message)
        return 1
    print(current_message)
    return 0
