"""The e2e phases' failure digest (localcluster/failure_digest.py): CI keeps only the head
and the tail of `make test`'s output, so each failed test's reason is printed once more,
last. Run on a throwaway suite, serially and on two xdist workers (the controller writes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from localcluster.paths import REPO_ROOT

pytestmark = pytest.mark.unit

SUITE = """
import pytest

def test_fails():
    print("llama: RolledBack 303s after the splitter ran")
    assert {"phase": "RolledBack"} == {"phase": "Promoted"}, "panel 'ITL': no data"

@pytest.fixture
def cluster():
    raise RuntimeError("the cluster did not start")

def test_errors(cluster):
    pass

def test_passes():
    pass
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_each_failed_test_is_one_line_with_its_reason(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    digest = tmp_path / "digest.txt"
    digest.write_text("FAILED an earlier phase's test (call): kept\n")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p", "no:randomly",
         "-p", "localcluster.failure_digest", f"--failure-digest={digest}", *workers,
         "test_suite.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={"PYTHONPATH": str(REPO_ROOT / "tests" / "cluster"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    lines = digest.read_text().splitlines()
    assert lines[0] == "FAILED an earlier phase's test (call): kept"  # appended, not replaced
    assert sorted(lines[1:]) == [
        "ERROR test_suite.py::test_errors (setup): RuntimeError: the cluster did not start",
        "FAILED test_suite.py::test_fails (call): AssertionError: panel 'ITL': no data assert "
        "{'phase': 'RolledBack'} == {'phase': 'Promoted'} Differing items: {'phase': "
        "'RolledBack'} != {'phase': 'Promoted'} Use -v to get more diff | printed: llama: "
        "RolledBack 303s after the splitter ran",
    ]
