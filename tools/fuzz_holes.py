"""Put each of issue 33's fail-open holes back, alone, and show the fuzzer catches it.

Why a script: the fuzzer (tests/unit/domain/test_fail_open_fuzz.py) is only worth its CI
time if it fails when a hole reopens. For each hole this applies one deliberate break to
the source (a one-line edit), runs the fuzzer's main property at its CI budget with
shrinking off (the first failing case, fast), prints the case and the assertion it broke,
and restores the file (also on Ctrl-C). Exit 1 when some break was not caught.

    .venv/bin/python tools/fuzz_holes.py            # every hole
    .venv/bin/python tools/fuzz_holes.py 3a 6       # some
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PKG = "operator/specdecode"


@dataclass(frozen=True)
class Break:
    """One hole reopened: `old` replaced by `new` in `path` (each must occur once)."""

    hole: str
    what: str
    path: str
    old: str
    new: str


BREAKS = (
    Break(
        "1",
        "flags: vLLM 0.32's --spec-method no longer reserved (the render guard's table)",
        f"{PKG}/api/engine_args.py",
        "    for dest, options in non_free_options().items()\n",
        '    for dest, options in non_free_options().items() if dest != "spec_method"\n',
    ),
    Break(
        "2a",
        "Mirror errors: a Mirror analysis without an enforced ErrorRate gate admitted",
        f"{PKG}/api/analysis_rules.py",
        "        _mirror_needs_some(enforced_error_gate, MIRROR_ERRORS_MESSAGE),\n",
        "",
    ),
    Break(
        "2b",
        "Mirror errors: the kernel stops judging ErrorRate under Mirror",
        f"{PKG}/api/certify.py",
        "    unjudged = [t.value for t in GateType if not EVIDENCE[t, source].judged]\n",
        "    unjudged = [t.value for t in GateType if not EVIDENCE[t, source].judged "
        "or (source.value, t.value) == ('Mirror', 'ErrorRate')]\n",
    ),
    Break(
        "3a",
        "hung requests: the candidate's requests held in the engine no longer count",
        f"{PKG}/domain/gates/mirror_outcomes.py",
        "    held = pair.candidate.in_flight - pair.baseline.in_flight\n",
        "    held = 0.0\n",
    ),
    Break(
        "3b",
        "hung requests: unread in-flight gauges are judged as if none were in flight",
        f"{PKG}/domain/gates/mirror_outcomes.py",
        '    if name == "candidate" and not side.in_flight_known:\n',
        "    if False:\n",
    ),
    Break(
        "4",
        "ServerStep without step counts: every observation counted as a step",
        f"{PKG}/domain/step_histogram.py",
        "    if not sides:\n        return None\n",
        "    if True:\n        return None\n",
    ),
    Break(
        "5",
        "fingerprint: a change of what the engines run keeps the analysis",
        f"{PKG}/domain/machine.py",
        "    if changed:\n",
        "    if False:\n",
    ),
    Break(
        "6",
        "schedule reach: Speedup skipped wherever k = 0 at the nominal concurrency",
        f"{PKG}/api/schedule_reach.py",
        'implies(Binary("<=", entry[0], batch), Binary("==", entry[2], lit(0)))',
        'implies(all_of(Binary("<=", entry[0], batch), Binary("<=", batch, entry[1])), '
        'Binary("==", entry[2], lit(0)))',
    ),
    Break(
        "7",
        "cannot-fail thresholds: maxErrorRate up to 1 admitted",
        f"{PKG}/api/gate_spec.py",
        "        le=0.2,\n",
        "        le=1,\n",
    ),
)
TEST = (
    "tests/unit/domain/test_fail_open_fuzz.py"
    "::test_no_stage_passes_and_no_rollout_promotes_without_evidence"
)


def run(hole: Break) -> bool:
    """Apply the break, run the fuzzer, print what it found; True when it failed."""
    path = REPO / hole.path
    source = path.read_text()
    assert source.count(hole.old) == 1, f"hole {hole.hole}: the line to break is not unique"
    path.write_text(source.replace(hole.old, hole.new))
    try:
        env = {**os.environ, "SPECDECODE_FUZZ_NO_SHRINK": "1"}
        done = subprocess.run(
            [".venv/bin/pytest", "-m", "unit", "-q", "-p", "no:randomly", "-x", TEST],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        path.write_text(source)
    out = done.stdout
    if os.environ.get("FUZZ_HOLES_RAW"):
        print(out[-6000:])
    caught = done.returncode != 0
    print(f"== hole {hole.hole}: {hole.what}", flush=True)
    if not caught:
        print("   NOT CAUGHT:", out.strip().splitlines()[-1])
        return False
    found = re.search(r"^E\s+AssertionError: (.*)$", out, re.M)
    print("   caught:", found.group(1) if found else out.strip().splitlines()[-1])
    print("   case:", _falsifying_example(out)[:1200])
    return True


def _falsifying_example(out: str) -> str:
    """Hypothesis' failing case (pytest's E-prefixed lines), on one line."""
    lines = out.splitlines()
    heads = ("Falsifying example", "Failing test case")
    start = next((i for i, line in enumerate(lines) if any(h in line for h in heads)), None)
    if start is None:
        return "(no falsifying example printed)"
    case = []
    for line in lines[start + 1 :]:
        if not line.startswith("E"):
            break
        case.append(line[1:].strip())
    return " ".join(" ".join(case).split())


def main(argv: list[str]) -> int:
    """Run the named holes (all by default); exit 1 if any break went uncaught."""
    chosen = [b for b in BREAKS if not argv or b.hole in argv]
    missed = [b.hole for b in chosen if not run(b)]
    print("missed:", ", ".join(missed) if missed else "none")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
