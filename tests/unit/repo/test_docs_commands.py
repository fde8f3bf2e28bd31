"""Every command the README and the quick-start pages tell a reader to run is accounted for.

A shell block (```bash, ```sh, ```shell, ```console) in these files is either run by a named
test, or sits under a marker saying what it needs that no test here has, e.g.
`<!-- needs: real cluster -->` on the line before the block. A command line in neither
fails, so a new command cannot slip in unaccounted; an entry of `RUN_BY` whose command no
page shows any more fails too, and so does one whose test does not hold the evidence.
`pytest -s` prints the list: which lines a test runs, and which need what.

The README is no page of the docs site, so `mkdocs build --strict` does not check its links:
the last test checks that every relative link in it names a file of the repository.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
PAGES = ("README.md", "docs/quickstart.md", "docs/install.md", "docs/adoption.md")
SHELL = ("bash", "sh", "shell", "console")
MARKER = re.compile(r"^<!-- needs: (.+?) -->$")

# command (as the page writes it, comments cut) -> (the file that runs it, texts in that file
# that show it does). Only what a test really runs: a command a test runs with other
# arguments belongs under a marker.
RUN_BY: dict[str, tuple[str, tuple[str, ...]]] = {
    "make test": (".ci/run", ("\nmake test\n",)),
    (
        "kubectl get sdr llama-8b -n team-a -o jsonpath='{range .status.conditions"
        '[?(@.type=="Degraded")]}{.status} {.reason}: {.message}{"\\n"}{end}\''
    ): (
        # the same jsonpath on the test's own rollout (name and namespace are the test's)
        "tests/e2e/test_rollout_lifecycle.py",
        (
            r"""'jsonpath={range .status.conditions[?(@.type=="Degraded")]}'""",
            r"""'{.status} {.reason}: {.message}{"\\n"}{end}'""",
            'cluster.kubectl("get", "sdr", r.name, "-n", r.namespace, "-o", SHOW_DEGRADED)',
        ),
    ),
}


@dataclass(frozen=True)
class Command:
    """One command line of a shell block, where it stands and what its block is marked."""

    page: str
    line: int
    text: str
    needs: str | None


def commands(page: str, root: Path = REPO) -> list[Command]:
    """The command lines of every shell block in `page` (continuations joined, comments cut)."""
    lines = (root / page).read_text().split("\n")
    found: list[Command] = []
    index = 0
    while index < len(lines):
        fence = re.match(r"^```(\w+)\s*$", lines[index])
        if not fence:
            index += 1
            continue
        language = fence.group(1)
        previous = next((text for text in reversed(lines[:index]) if text.strip()), "")
        marker = MARKER.match(previous.strip())
        needs = marker.group(1) if marker else None
        index += 1
        pending = ""
        while index < len(lines) and not lines[index].startswith("```"):
            text = lines[index]
            index += 1
            if language not in SHELL:
                continue
            if language == "console":
                if not (text.startswith("$ ") or pending):
                    continue
                text = text.removeprefix("$ ")
            text = _without_comment(text).strip()
            if not text:
                continue
            if text.endswith("\\"):
                pending += text[:-1].strip() + " "
                continue
            found.append(Command(page, index, pending + text, needs))
            pending = ""
        index += 1
    return found


def _without_comment(text: str) -> str:
    """A shell comment: `#` at the start or after a space, outside quotes."""
    quote = ""
    for position, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (position == 0 or text[position - 1].isspace()):
            return text[:position]
    return text


def all_commands() -> list[Command]:
    return [command for page in PAGES for command in commands(page)]


def test_every_command_is_run_by_a_test_or_marked() -> None:
    unaccounted = []
    print("\nCommands in the README and the quick-start pages:")
    for command in all_commands():
        where = f"{command.page}:{command.line}"
        if command.text in RUN_BY:
            print(f"  run by {RUN_BY[command.text][0]:<38} {where:<24} {command.text}")
        elif command.needs:
            print(f"  needs {command.needs[:39]:<39} {where:<24} {command.text}")
        else:
            unaccounted.append(f"{where}: {command.text}")
    assert not unaccounted, (
        "commands neither run by a test (RUN_BY) nor under a `<!-- needs: ... -->` "
        "marker:\n" + "\n".join(unaccounted)
    )


def test_each_listed_command_is_shown_and_its_test_runs_it() -> None:
    shown = {command.text for command in all_commands()}
    for command, (runner, evidence) in RUN_BY.items():
        assert command in shown, f"no page shows {command!r} any more: drop it from RUN_BY"
        source = (REPO / runner).read_text()
        for text in evidence:
            assert text in source, f"{runner} does not run {command!r}: no {text!r}"


def test_the_readme_fits_on_a_few_screens_and_starts_with_the_two_commands() -> None:
    readme = (REPO / "README.md").read_text().split("\n")
    assert len(readme) <= 200, f"README.md has {len(readme)} lines; move detail to docs/"
    first_screen = "\n".join(readme[:40])
    assert "make demo" in first_screen and "make test" in first_screen


def test_the_readme_links_name_files_that_exist() -> None:
    readme = (REPO / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    relative = [target for target in targets if "://" not in target]
    assert relative, "the README links to nothing in the repository?"
    missing = [target for target in relative if not (REPO / target).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_parser_sees_markers_continuations_and_comments(tmp_path: Path) -> None:
    """The parser itself, on a page with each case: it must not hide a command."""
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\nmake demo   # a comment\n```\n\n<!-- needs: real cluster -->\n"
        "```bash\n# only a comment\nhelm install a \\\n  --set b=c\n```\n"
        "```console\n$ kubectl get sdr '#x'\noutput line\n```\n```yaml\nkey: v\n```\n"
    )
    found = commands("page.md", root=tmp_path)
    assert [(c.text, c.needs) for c in found] == [
        ("make demo", None),
        ("helm install a --set b=c", "real cluster"),
        ("kubectl get sdr '#x'", None),
    ]
