"""Fail-open fuzzer (issue 33): no Promote, and no Successful stage, without evidence.

Hypothesis draws specs the API admits and sequences of looks (`domain_fuzz`), and drives
them through `decide`, the pure function the reconciler calls each look, over a simulated
clock; the engines follow status (production and the baseline run the stable config, the
candidate the config under analysis). After every look the invariants below are checked.
The oracle is the certification kernel (`api.certify`: which gates certify a stage), with
the documented rule written out beside it (`documented_certifies`: a gate either names is
held to a pass), so a clause broken inside the kernel is caught too; the evidence rules are
stated from the API's documented meaning, not by calling the domain's own judgement
(`passed_on_evidence`):

(a) a stage is Successful only if it has at least one gate that certifies it (not dryRun,
    not failOnly, applying to the rollout's method, judged under the traffic source and,
    for a Speedup gate asking a gain, at a concurrency where the candidate may speculate at
    some batch size from 1 up), and every such gate's result is Successful, its bound
    clears the gate's own threshold, and the units (or samples) it judged reach the gate's
    own minimum; a gate the kernel does not judge never reports a verdict (it stays Pending);
(b) the analysis ends in Promoting, or in Paused awaiting promotion, only if every stage
    of the spec ended Successful; a manual analysis never promotes by itself;
(c) a look with no observations of the running stage makes no gate Successful, and a
    rollout that never measured anything has no Successful stage and never promotes;
(d) no gate is Successful at a look that lacked what it needs: Mirror's ErrorRate with
    requests hung in the candidate engine, unread in-flight gauges, a restart or no
    counts; a ServerStep tail without the engine-step count (holes 2-4);
(e) after an edit of what the engines run (model revision, image, extraArgs), no stage is
    Successful on looks begun before it (hole 5);
(f) the API admits no extraArgs spelling a recorded vLLM parser reads as a speculative
    destination (hole 1), no threshold that cannot fail (hole 7), and no Mirror analysis
    without an enforced ErrorRate gate (hole 2).
Manual analyses mark stages Successful after their minimum duration by design (a person
decides); (a) is waived for them and (b) holds them to never promoting without an action.
`tools/fuzz_holes.py` puts each hole back alone and shows this fuzzer's failing case.

Budget: a fixed seed (`derandomize`), no deadline; SPECDECODE_FUZZ_EXAMPLES sets the
examples per property (default 2,500: 5,000 cases in all). A longer
hunt: `SPECDECODE_FUZZ_EXAMPLES=100000 .venv/bin/pytest -m unit -n 2 -p no:randomly
tests/unit/domain/test_fail_open_fuzz.py` (the timeout grows with it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from domain_fixtures import planned, ready
from domain_fuzz import (
    SETS,
    STABLE_NGRAM,
    Fields,
    Look,
    admitted_spec,
    edited,
    empty_looks,
    looks,
    spec_fields,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import Phase as Phase_
from hypothesis import strategies as st

from specdecode.adapters.gate_boundary import gate_params
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import (
    GateSpec,
    GateType,
    GateVerdict,
    Phase,
    SpecDecodeRolloutSpec,
    StagePhase,
    StageSpec,
)
from specdecode.api.certify import Certification, StageContext, certify, evidence_row
from specdecode.api.gate_spec import ItlDefinition
from specdecode.api.speculative import NO_SPECULATION, fingerprint_of
from specdecode.domain.machine import decide
from specdecode.domain.observations import ChildRole, Observations
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.speculative_setting import SpeculativeSetting
from specdecode.domain.stage_state import GateRecord
from specdecode.reconciler.analysis_boundary import plan_of

# Examples per property (see the module docstring for the measured cost).
EXAMPLES = int(os.environ.get("SPECDECODE_FUZZ_EXAMPLES", "2500"))
# pytest-timeout's default (300 s) would cut a longer hunt short: a case took up to 0.2 s
# of wall time on a busy shared machine; the default run stays well inside it.
pytestmark = [
    pytest.mark.unit,
    pytest.mark.long_running,
    pytest.mark.timeout(max(300, EXAMPLES * 3 // 10)),
]
# tools/fuzz_holes.py skips shrinking: it wants the first failing case, fast.
PHASES = (
    [Phase_.explicit, Phase_.reuse, Phase_.generate]
    if os.environ.get("SPECDECODE_FUZZ_NO_SHRINK")
    else list(Phase_)
)
FUZZ = settings(
    phases=PHASES,
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
MAX_LOOKS = 40
ENDED = frozenset({Phase.PROMOTING, Phase.PAUSED, Phase.ROLLED_BACK, Phase.FAILED})
# The gates' own thresholds: higher is better for these, lower for the others.
AT_LEAST = {
    GateType.ACCEPTANCE: "min_alpha",
    GateType.ACCEPTED_LENGTH: "min_accepted_length",
    GateType.SPEEDUP: "min_speedup",
}
# What a look lacked, as missing or failing evidence for a gate judged Successful at it:
# Mirror's ErrorRate on engine outcome counts that hide hung requests, leave the in-flight
# gauges unread, span a restart or are absent; a ServerStep tail without step counts.
MIRROR_ERRORS_MISSING = frozenset(
    {"hung", "gauges unknown", "restarted", "unscraped", "none", "error"}
)
SERVER_STEPS_MISSING = frozenset({"no-steps", "none", "error", "empty"})
# Thresholds at which a gate cannot fail (issue 33, hole 7), by the API's documentation:
# a bound is the least an SRE would still refuse; past it, nothing fails.
CANNOT_FAIL: dict[str, Callable[[float], bool]] = {
    "max_error_rate": lambda v: v > 0.2,
    "tolerance": lambda v: v > 1.0,
    "min_speedup": lambda v: v < 0.5,
    "min_alpha": lambda v: v < 0.05,
    "min_accepted_length": lambda v: v < 1.05,
}


# ---------------------------------------------------------------- the oracle


def speculation_off(candidate: SpeculativeSetting | None, stage: StageSpec) -> bool:
    """The candidate's per-batch-size schedule gives k = 0 at every batch size from 1 to the
    stage's concurrency (a closed loop's batches dip below it; a batch size in no range has
    no documented k, so it counts as speculating)."""
    schedule = None if candidate is None else candidate.schedule
    if not schedule or stage.concurrency is None:
        return False
    k_at = {b: k for low, high, k in schedule for b in range(low, min(high, 4096) + 1)}
    return all(k_at.get(batch, 1) == 0 for batch in range(1, stage.concurrency + 1))


def kernel(
    spec: SpecDecodeRolloutSpec,
    gate: GateSpec,
    stage: StageSpec,
    candidate: SpeculativeSetting | None,
) -> Certification:
    """The certification kernel's answer (`api.certify`): the oracle's first word."""
    schedule = None if candidate is None else candidate.schedule
    method = spec.speculative.method.value if spec.speculative is not None else None
    context = StageContext(evidence_row(spec.analysis.traffic), method, stage.concurrency, schedule)
    return certify(gate, context)


def documented_certifies(
    spec: SpecDecodeRolloutSpec,
    gate: GateSpec,
    stage: StageSpec,
    candidate: SpeculativeSetting | None,
) -> bool:
    """The API's documented meaning, written out: a cross-check, so a kernel that drops a
    gate it should certify (a clause broken inside it) is caught too."""
    if gate.dry_run or gate.fail_only:
        return False
    method = spec.speculative.method.value if spec.speculative is not None else NO_SPECULATION
    if gate.methods and method not in gate.methods:
        return False
    if spec.analysis.traffic.server_side_mirror and gate.type in (GateType.SPEEDUP,):
        return False
    asks_gain = gate.type is GateType.SPEEDUP and gate.number("min_speedup") >= 1.0
    return not (asks_gain and speculation_off(candidate, stage))


def enforced_gates(
    spec: SpecDecodeRolloutSpec, stage: StageSpec, candidate: SpeculativeSetting | None
) -> list[GateSpec]:
    """The gates whose pass a stage's pass rests on: the kernel's, and any the documented
    meaning adds."""
    return [
        gate
        for gate in stage.gates
        if kernel(spec, gate, stage, candidate).certifies
        or documented_certifies(spec, gate, stage, candidate)
    ]


def check_admitted(spec: SpecDecodeRolloutSpec) -> None:
    """What the API admits: no extraArgs spelling that a recorded vLLM parser reads as a
    speculative destination (hole 1), no gate whose threshold cannot fail (hole 7), and
    under Mirror, some enforced ErrorRate gate for every method (hole 2)."""
    args = tuple(spec.model.extra_args or ())
    sets = [dest for dest in SETS.get(args, ()) if dest.startswith("spec")]
    assert not sets, f"extraArgs {list(args)} admitted, yet vLLM reads it as {sets}"
    for stage in spec.analysis.stages:
        for gate in stage.gates:
            for field, cannot_fail in CANNOT_FAIL.items():
                value = getattr(gate, field)
                assert value is None or not cannot_fail(value), (
                    f"{stage.name}/{gate.name}: {field} {value} admitted: it cannot fail"
                )
    if spec.analysis.traffic.server_side_mirror and not spec.analysis.manual:
        assert any(
            gate.type is GateType.ERROR_RATE
            and not (gate.dry_run or gate.fail_only or gate.methods)
            for stage in spec.analysis.stages
            for gate in stage.gates
        ), "a Mirror analysis admitted without an enforced ErrorRate gate"


def look_problem(spec: SpecDecodeRolloutSpec, gate: GateSpec, look: Look) -> str | None:
    """What `look` lacked that `gate` needs, judged Successful at it (None: nothing)."""
    mirror = spec.analysis.traffic.server_side_mirror
    if mirror and gate.type is GateType.ERROR_RATE and look.outcomes in MIRROR_ERRORS_MISSING:
        return f"engine outcomes {look.outcomes!r}"
    server_step = mirror or gate.itl_definition is ItlDefinition.SERVER_STEP
    if gate.type is GateType.TAIL_LATENCY and server_step and look.server in SERVER_STEPS_MISSING:
        return f"step histograms {look.server!r}"
    return None


def check_look(
    spec: SpecDecodeRolloutSpec, status: RolloutState, look: Look, now: datetime
) -> None:
    """No gate is Successful at a look that lacked what it needs (holes 2-4)."""
    for stage in status.stages:
        gates = {g.name: g for s in spec.analysis.stages if s.name == stage.name for g in s.gates}
        for result in stage.gates:
            gate = gates.get(result.name)
            if gate is None or result.measured_at != now:
                continue
            if result.verdict is not GateVerdict.SUCCESSFUL:
                continue
            problem = look_problem(spec, gate, look)
            assert problem is None, (
                f"{stage.name}/{gate.name} Successful at a look with {problem}: {result.reason}"
            )


def evidence_problem(gate: GateSpec, result: GateRecord) -> str | None:
    """Why `result` is no Successful verdict on evidence for `gate`, or None when it is."""
    if result.verdict is not GateVerdict.SUCCESSFUL:
        return f"verdict {result.verdict.value}"
    if gate.type in AT_LEAST:
        threshold = gate.number(AT_LEAST[gate.type])
        if result.lower_bound is None or result.lower_bound < threshold:
            return f"lower bound {result.lower_bound} under {threshold}"
    else:
        limit = gate.number("max_error_rate")
        if gate.type is GateType.TAIL_LATENCY:
            limit = 1.0 + gate.number("tolerance")
        if result.upper_bound is None or result.upper_bound > limit:
            return f"upper bound {result.upper_bound} over {limit}"
    return _below_minimum(gate, result)


def _below_minimum(gate: GateSpec, result: GateRecord) -> str | None:
    """The gate's own minimum: requests, time blocks, steps (ServerStep: as set), and the
    draft tokens of an Acceptance gate."""
    if gate.type is GateType.TAIL_LATENCY and gate.itl_definition is ItlDefinition.SERVER_STEP:
        needed, judged = gate.min_samples or 1, result.samples
    else:
        needed, judged = gate_params(gate).effective_min_samples, result.units
    if judged is None or judged < needed:
        return f"judged {judged} units, needs {needed}"
    tokens = gate.setting("min_draft_tokens")
    if gate.type is GateType.ACCEPTANCE and (result.samples or 0) < int(str(tokens)):
        return f"judged {result.samples} draft tokens, needs {tokens}"
    return None


def check_stages(spec: SpecDecodeRolloutSpec, status: RolloutState) -> None:
    """(a) for every stage in status: Successful ones on evidence, unjudged gates silent."""
    candidate = status.candidate_speculative
    by_name = {stage.name: stage for stage in spec.analysis.stages}
    for stage in status.stages:
        stage_spec = by_name[stage.name]
        results = {result.name: result for result in stage.gates}
        for gate in stage_spec.gates:
            result = results.get(gate.name)
            if result is not None and not kernel(spec, gate, stage_spec, candidate).judged:
                assert result.verdict is GateVerdict.PENDING, (
                    f"{stage.name}/{gate.name} is not judged in this rollout yet reports "
                    f"{result.verdict.value}: {result.reason}"
                )
        if stage.phase is not StagePhase.SUCCESSFUL or spec.analysis.manual:
            continue
        enforced = enforced_gates(spec, stage_spec, candidate)
        assert enforced, f"stage {stage.name} Successful with no enforced gate: {stage.message}"
        for gate in enforced:
            result = results.get(gate.name)
            problem = "no result" if result is None else evidence_problem(gate, result)
            assert problem is None, (
                f"stage {stage.name} Successful but gate {gate.name} ({gate.type.value}): "
                f"{problem}; {result.reason if result else ''}"
            )


def check_ending(spec: SpecDecodeRolloutSpec, status: RolloutState) -> None:
    """(b): Promoting, or Paused awaiting promotion, only after every stage passed."""
    if status.phase is Phase.PROMOTING:
        assert not spec.analysis.manual, f"a manual analysis promoted: {status.message}"
    elif not (status.phase is Phase.PAUSED and status.reason == "AwaitingPromotion"):
        return
    passed = [stage.name for stage in status.stages if stage.phase is StagePhase.SUCCESSFUL]
    wanted = [stage.name for stage in spec.analysis.stages]
    assert passed == wanted, f"{status.phase.value} with only {passed} of {wanted} passed"


def check_since_edit(status: RolloutState, edited_at: datetime | None) -> None:
    """(d) hole 5: after an edit of what the engines run, no stage is Successful on looks
    begun before it (the analysis restarts)."""
    if edited_at is None or status.phase not in (Phase.ANALYZING, Phase.PROMOTING, Phase.PAUSED):
        return
    for stage in status.stages:
        if stage.phase is StagePhase.SUCCESSFUL:
            assert stage.started_at is not None and stage.started_at >= edited_at, (
                f"stage {stage.name} Successful on looks from {stage.started_at}, before the "
                f"engines changed at {edited_at}: {stage.message}"
            )


def check_no_data_look(status: RolloutState, now: datetime) -> None:
    """(c): nothing judged at a look that saw nothing is Successful."""
    for stage in status.stages:
        for gate in stage.gates:
            judged_now = gate.measured_at == now
            assert not (judged_now and gate.verdict is GateVerdict.SUCCESSFUL), (
                f"{stage.name}/{gate.name} Successful from a look with no data: {gate.reason}"
            )


# ---------------------------------------------------------------- the simulated world


def world(spec: SpecDecodeRolloutSpec, status: RolloutState, look: Look | None) -> Observations:
    """The engines follow status; the running stage's window is what `look` saw; the spec's
    analysis plan as observe builds it."""
    stable, candidate = status.stable_speculative, status.candidate_speculative
    stage = None if look is None else look.observations(status.current_stage or "")
    return Observations(
        generation=1,
        children={
            ChildRole.PRODUCTION: ready(stable),
            ChildRole.BASELINE: ready(stable),
            ChildRole.CANDIDATE: ready(candidate),
        },
        stage=stage,
        plan=plan_of(spec),
    )


def starting_status(spec: SpecDecodeRolloutSpec) -> RolloutState:
    """Production on plain decoding, or on n-gram when plain decoding is what is desired."""
    if spec.speculative is not None:
        return RolloutState()
    return RolloutState(
        phase=Phase.PROMOTED,
        stable_speculative=setting_of(STABLE_NGRAM),
        stable_fingerprint=fingerprint_of(STABLE_NGRAM),
        candidate_speculative=setting_of(STABLE_NGRAM),
        candidate_fingerprint=fingerprint_of(STABLE_NGRAM),
    )


def drive(spec: SpecDecodeRolloutSpec, sequence: list[Look]) -> RolloutState:
    """Reconcile once with no window (the rollout starts), then once per look, checking
    the invariants after each; stop once the analysis has ended."""
    now = T0
    check_admitted(spec)
    start = starting_status(spec)
    status = decide(start, planned(spec, world(spec, start, None), start), now).status
    edited_at = None
    for look in (look for drawn in sequence for look in [drawn] * drawn.repeat):
        now += timedelta(seconds=look.seconds)
        changed = edited(spec, look.edit) if look.edit else None
        if changed is not None:
            spec, edited_at = changed, now
        status = decide(status, planned(spec, world(spec, status, look), status), now).status
        check_stages(spec, status)
        check_ending(spec, status)
        check_look(spec, status, look, now)
        check_since_edit(status, edited_at)
        if not look.has_data:
            check_no_data_look(status, now)
        if status.phase in ENDED:
            return status
    return status


# ---------------------------------------------------------------- the properties


@FUZZ
@given(fields=spec_fields(), sequence=st.lists(looks(), min_size=1, max_size=MAX_LOOKS))
def test_no_stage_passes_and_no_rollout_promotes_without_evidence(
    fields: Fields, sequence: list[Look]
) -> None:
    spec = admitted_spec(fields)
    final = drive(spec, sequence)
    event(f"ended {final.phase.value}")
    passed = sum(stage.phase is StagePhase.SUCCESSFUL for stage in final.stages)
    event(f"stages passed: {passed}")


@FUZZ
@given(fields=spec_fields(), sequence=st.lists(empty_looks(), min_size=1, max_size=MAX_LOOKS))
def test_nothing_measured_never_passes_a_stage(fields: Fields, sequence: list[Look]) -> None:
    spec = admitted_spec(fields)
    final = drive(spec, sequence)
    if not spec.analysis.manual:
        assert all(stage.phase is not StagePhase.SUCCESSFUL for stage in final.stages)
        assert final.phase not in (Phase.PROMOTING, Phase.PAUSED), final.message
