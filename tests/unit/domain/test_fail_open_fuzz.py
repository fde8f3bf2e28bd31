"""Fail-open fuzzer (issue 33): no Promote, and no Successful stage, without evidence.

Hypothesis draws specs the API admits and sequences of looks (`domain_fuzz`), and drives
them through `decide`, the pure function the reconciler calls each look, over a simulated
clock; the engines follow status (production and the baseline run the stable config, the
candidate the config under analysis). After every look the invariants below are checked
against the spec, stated here from the API's documented meaning, not by calling the
domain's own judgement (`passed_on_evidence`, `not_judged_reason`):

(a) a stage is Successful only if it has at least one enforced gate (not dryRun, not
    failOnly, applying to the rollout's method, judged under the traffic source and, for a
    Speedup gate asking a gain, at a concurrency where the candidate speculates), and every
    enforced gate's result is Successful, its bound clears the gate's own threshold, and
    the units (or samples) it judged reach the gate's own minimum; a gate not judged for
    the rollout never reports a verdict (it stays Pending);
(b) the analysis ends in Promoting, or in Paused awaiting promotion, only if every stage
    of the spec ended Successful; a manual analysis never promotes by itself;
(c) a look with no observations of the running stage makes no gate Successful, and a
    rollout that never measured anything has no Successful stage and never promotes.
Manual analyses mark stages Successful after their minimum duration by design (a person
decides); (a) is waived for them and (b) holds them to never promoting without an action.

Budget: a fixed seed (`derandomize`), no deadline; SPECDECODE_FUZZ_EXAMPLES sets the
examples per property (default 2,500: 5,000 cases in all, 99 s of wall time on two xdist
workers of the otherwise quiet 2-core machine, about 37 ms of CPU a case). A longer
hunt: `SPECDECODE_FUZZ_EXAMPLES=100000 .venv/bin/pytest -m unit -n 2 -p no:randomly
tests/unit/domain/test_fail_open_fuzz.py` (the timeout grows with it).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from domain_fixtures import ready
from domain_fuzz import (
    STABLE_NGRAM,
    Fields,
    Look,
    admitted_spec,
    empty_looks,
    looks,
    spec_fields,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from specdecode.api import (
    GateResult,
    GateSpec,
    GateType,
    GateVerdict,
    Phase,
    SpecDecodeRolloutSpec,
    SpecDecodeRolloutStatus,
    SpeculativeConfig,
    StagePhase,
    StageSpec,
)
from specdecode.api.gate_spec import ItlDefinition
from specdecode.api.speculative import NO_SPECULATION, fingerprint_of
from specdecode.domain.machine import decide
from specdecode.domain.observations import ChildRole, Observations

# Examples per property (see the module docstring for the measured cost).
EXAMPLES = int(os.environ.get("SPECDECODE_FUZZ_EXAMPLES", "2500"))
# pytest-timeout's default (300 s) would cut a longer hunt short: a case took up to 0.2 s
# of wall time on a busy shared machine; the default run stays well inside it.
pytestmark = [pytest.mark.unit, pytest.mark.timeout(max(300, EXAMPLES * 3 // 10))]
FUZZ = settings(
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
# Mirror judges ErrorRate from the engines' outcome counters (issue 33); Speedup never.
MIRROR_UNJUDGED = frozenset({GateType.SPEEDUP})


# ---------------------------------------------------------------- the oracle


def speculation_off(candidate: SpeculativeConfig | None, stage: StageSpec) -> bool:
    """The candidate's per-batch-size schedule gives k = 0 at the stage's concurrency."""
    if candidate is None or stage.concurrency is None:
        return False
    for start, end, k in candidate.num_speculative_tokens_per_batch_size or []:
        if start <= stage.concurrency <= end:
            return k == 0
    return False


def judged_here(
    spec: SpecDecodeRolloutSpec,
    gate: GateSpec,
    stage: StageSpec,
    candidate: SpeculativeConfig | None,
) -> bool:
    """The API's meaning of a gate that is judged in this rollout at this stage."""
    method = spec.speculative.method.value if spec.speculative is not None else NO_SPECULATION
    if gate.methods and method not in gate.methods:
        return False
    if spec.analysis.traffic.server_side_mirror and gate.type in MIRROR_UNJUDGED:
        return False
    asks_gain = gate.type is GateType.SPEEDUP and gate.number("min_speedup") >= 1.0
    return not (asks_gain and speculation_off(candidate, stage))


def enforced_gates(
    spec: SpecDecodeRolloutSpec, stage: StageSpec, candidate: SpeculativeConfig | None
) -> list[GateSpec]:
    """The gates whose pass a stage's pass rests on."""
    return [
        gate
        for gate in stage.gates
        if not gate.dry_run and not gate.fail_only and judged_here(spec, gate, stage, candidate)
    ]


def evidence_problem(gate: GateSpec, result: GateResult) -> str | None:
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


def _below_minimum(gate: GateSpec, result: GateResult) -> str | None:
    """The gate's own minimum: requests, time blocks, steps (ServerStep: as set), and the
    draft tokens of an Acceptance gate."""
    if gate.type is GateType.TAIL_LATENCY and gate.itl_definition is ItlDefinition.SERVER_STEP:
        needed, judged = gate.min_samples or 1, result.samples
    else:
        needed, judged = gate.effective_min_samples, result.units
    if judged is None or judged < needed:
        return f"judged {judged} units, needs {needed}"
    tokens = gate.setting("min_draft_tokens")
    if gate.type is GateType.ACCEPTANCE and (result.samples or 0) < int(str(tokens)):
        return f"judged {result.samples} draft tokens, needs {tokens}"
    return None


def check_stages(spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus) -> None:
    """(a) for every stage in status: Successful ones on evidence, unjudged gates silent."""
    candidate = status.candidate_speculative
    by_name = {stage.name: stage for stage in spec.analysis.stages}
    for stage in status.stages:
        stage_spec = by_name[stage.name]
        results = {result.name: result for result in stage.gates}
        for gate in stage_spec.gates:
            result = results.get(gate.name)
            if result is not None and not judged_here(spec, gate, stage_spec, candidate):
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


def check_ending(spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus) -> None:
    """(b): Promoting, or Paused awaiting promotion, only after every stage passed."""
    if status.phase is Phase.PROMOTING:
        assert not spec.analysis.manual, f"a manual analysis promoted: {status.message}"
    elif not (status.phase is Phase.PAUSED and status.reason == "AwaitingPromotion"):
        return
    passed = [stage.name for stage in status.stages if stage.phase is StagePhase.SUCCESSFUL]
    wanted = [stage.name for stage in spec.analysis.stages]
    assert passed == wanted, f"{status.phase.value} with only {passed} of {wanted} passed"


def check_no_data_look(status: SpecDecodeRolloutStatus, now: datetime) -> None:
    """(c): nothing judged at a look that saw nothing is Successful."""
    for stage in status.stages:
        for gate in stage.gates:
            judged_now = gate.measured_at == now
            assert not (judged_now and gate.verdict is GateVerdict.SUCCESSFUL), (
                f"{stage.name}/{gate.name} Successful from a look with no data: {gate.reason}"
            )


# ---------------------------------------------------------------- the simulated world


def world(status: SpecDecodeRolloutStatus, look: Look | None) -> Observations:
    """The engines follow status; the running stage's window is what `look` saw."""
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
    )


def starting_status(spec: SpecDecodeRolloutSpec) -> SpecDecodeRolloutStatus:
    """Production on plain decoding, or on n-gram when plain decoding is what is desired."""
    if spec.speculative is not None:
        return SpecDecodeRolloutStatus()
    return SpecDecodeRolloutStatus(
        phase=Phase.PROMOTED,
        stable_speculative=STABLE_NGRAM,
        stable_fingerprint=fingerprint_of(STABLE_NGRAM),
        candidate_speculative=STABLE_NGRAM,
        candidate_fingerprint=fingerprint_of(STABLE_NGRAM),
    )


def drive(spec: SpecDecodeRolloutSpec, sequence: list[Look]) -> SpecDecodeRolloutStatus:
    """Reconcile once with no window (the rollout starts), then once per look, checking
    the invariants after each; stop once the analysis has ended."""
    now = T0
    status = decide(spec, starting_status(spec), world(starting_status(spec), None), now).status
    for look in (look for drawn in sequence for look in [drawn] * drawn.repeat):
        now += timedelta(seconds=look.seconds)
        status = decide(spec, status, world(status, look), now).status
        check_stages(spec, status)
        check_ending(spec, status)
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
