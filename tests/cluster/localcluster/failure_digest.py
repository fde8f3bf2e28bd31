"""A pytest plugin (the Makefile's e2e phases: `-p localcluster.failure_digest`): each failed
or erroring test's one-line reason, appended to the file `--failure-digest` names.

Why: CI keeps the head and the tail of `make test`'s output. The e2e suite runs in two
phases, so phase 1's short summary sits in the middle, and a long test's traceback (its
source printed up to the failing line) filled the head: CI of stop 47 said the chart test
failed, never why. The Makefile prints the digest last, after both phases.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Enough for an assertion's message and the verdict a test printed; a digest, not a log.
MESSAGE_CHARS = 600
PRINTED_LINES = 3


def pytest_addoption(parser: pytest.Parser) -> None:
    """The file to append to (none: the plugin does nothing)."""
    parser.addoption("--failure-digest", default=None, help="append failed tests' reasons here")


def digest_line(report: pytest.TestReport) -> str:
    """`FAILED|ERROR nodeid (when): the crash message | the test's last printed lines`."""
    kind = "FAILED" if report.when == "call" else "ERROR"
    crash = getattr(report.longrepr, "reprcrash", None)
    message = " ".join(str(getattr(crash, "message", report.longrepr)).split())
    printed = [line for line in report.capstdout.splitlines() if line.strip()][-PRINTED_LINES:]
    tail = " | ".join(line.strip() for line in printed)
    text = f"{message[:MESSAGE_CHARS]}" + (f" | printed: {tail[:MESSAGE_CHARS]}" if tail else "")
    return f"{kind} {report.nodeid} ({report.when}): {text}"


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """On the process that prints the summary (xdist's controller, or a serial run)."""
    path = terminalreporter.config.getoption("--failure-digest")
    if not path or hasattr(terminalreporter.config, "workerinput"):
        return
    reports = [
        *terminalreporter.stats.get("failed", []),
        *terminalreporter.stats.get("error", []),
    ]
    lines = [digest_line(r) for r in reports if isinstance(r, pytest.TestReport)]
    if lines:
        with Path(path).open("a", encoding="utf-8") as digest:
            digest.write("".join(f"{line}\n" for line in lines))
