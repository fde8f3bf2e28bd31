"""Fail closed (issue 22): no stage passes, and no rollout promotes, without evidence.

Every method of every supported vLLM release, under the default stages, with no data at
all: no stage may end Successful and `decide` may never reach Promoting. A stage whose
gates can judge nothing (admitted before the API server refused such stages) ends
Inconclusive at maxDuration and says why.
"""

from __future__ import annotations

import random

import pytest
from domain_fixtures import (
    EAGLE3,
    blocked_samples,
    make_spec,
    observe,
    ready,
    run,
    shadows_ready,
    stage_obs,
)

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import (
    EngineSpec,
    GateSpec,
    GateType,
    GateVerdict,
    Phase,
    SpecDecodeRolloutSpec,
    SpeculativeConfig,
    StagePhase,
)
from specdecode.api.analysis import default_stages
from specdecode.api.speculative import fingerprint_of
from specdecode.api.vllm_versions import (
    METHODS,
    NEVER_STARTS,
    NEWEST_MINOR,
    OLDEST_SUPPORTED,
    methods_in,
)
from specdecode.domain.analyzing import NOTHING_ENFORCED, passed_on_evidence
from specdecode.domain.observations import LatencySamples, Observations, StageObservations
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.stage_state import GateRecord

pytestmark = pytest.mark.unit

# One release per supported minor: the oldest patch of 0.11, then each 0.Y.0.
RELEASES = [
    ".".join(map(str, OLDEST_SUPPORTED)),
    *(f"0.{minor}.0" for minor in range(OLDEST_SUPPORTED[1] + 1, NEWEST_MINOR + 1)),
]
CASES = [(release, method) for release in RELEASES for method in sorted(methods_in(release))]
LOOK_EVERY = 15  # the default intervalSeconds


def _spec(release: str, method: str) -> SpecDecodeRolloutSpec:
    """A rollout of `method` on `release` with the default stages."""
    config = SpeculativeConfig(
        method=method,
        model="org/draft" if METHODS[method].needs_model else None,
        num_speculative_tokens=3,
    )
    base = make_spec(speculative=None, stages=default_stages())
    return SpecDecodeRolloutSpec(
        model=base.model,
        engine=EngineSpec(image=f"vllm/vllm-openai:v{release}"),
        speculative=config,
        analysis=base.analysis,
    )


def _analyzing(spec: SpecDecodeRolloutSpec) -> RolloutState:
    first = run(spec, RolloutState(), observe(), 0)
    second = run(spec, first.status, shadows_ready(candidate=spec.speculative), 0)
    assert second.status.phase is Phase.ANALYZING, second.status
    return second.status


def _empty(spec: SpecDecodeRolloutSpec, status: RolloutState) -> Observations:
    """Both shadows ready; the stage in progress measured nothing at all."""
    stage = status.current_stage or ""
    return shadows_ready(candidate=spec.speculative, stage=StageObservations(stage_name=stage))


def _run_to_the_end(
    spec: SpecDecodeRolloutSpec,
) -> tuple[RolloutState, list[RolloutState]]:
    """Look every interval until the analysis ends (or two stages' worth of time)."""
    status = _analyzing(spec)
    seen = [status]
    horizon = sum(s.warmup_seconds + s.max_duration_seconds for s in spec.analysis.stages)
    for seconds in range(LOOK_EVERY, horizon + 2 * LOOK_EVERY, LOOK_EVERY):
        status = run(spec, status, _empty(spec, status), seconds).status
        seen.append(status)
        if status.phase is not Phase.ANALYZING:
            break
    return status, seen


def test_every_release_and_method_is_covered() -> None:
    assert len(RELEASES) == NEWEST_MINOR - OLDEST_SUPPORTED[1] + 1
    # mlp_speculator starts in no release (NEVER_STARTS): refused before any stage runs.
    assert {method for _, method in CASES} == set(METHODS) - set(NEVER_STARTS)


@pytest.mark.parametrize(("release", "method"), CASES, ids=[f"{r}-{m}" for r, m in CASES])
def test_default_stages_never_pass_on_no_data(release: str, method: str) -> None:
    spec = _spec(release, method)
    final, seen = _run_to_the_end(spec)
    assert all(status.phase is not Phase.PROMOTING for status in seen)
    assert all(stage.phase is not StagePhase.SUCCESSFUL for s in seen for stage in s.stages)
    # The first stage ran out of time undecided and rolled back (inconclusiveLimit 0).
    assert final.phase is Phase.ROLLED_BACK, final.message
    assert "undecided after 600s" in final.message


def _nothing_enforced(spec: SpecDecodeRolloutSpec) -> SpecDecodeRolloutSpec:
    """One stage whose only gate is a dry run: refused by the API server and the models
    now, so built around validation, as an object stored before those rules would be."""
    stage = spec.analysis.stages[0].model_copy(
        update={"gates": [GateSpec(name="alpha", type=GateType.ACCEPTANCE, dry_run=True)]}
    )
    analysis = spec.analysis.model_copy(update={"stages": [stage]})
    return spec.model_copy(update={"analysis": analysis})


def test_a_stage_with_no_enforced_gate_ends_inconclusive_and_says_why() -> None:
    spec = _nothing_enforced(make_spec())
    final, seen = _run_to_the_end(spec)
    assert all(status.phase is not Phase.PROMOTING for status in seen)
    assert final.phase is Phase.ROLLED_BACK
    assert NOTHING_ENFORCED in final.message
    assert final.stages[0].phase is StagePhase.INCONCLUSIVE


def _result(verdict: GateVerdict, samples: int | None, units: int | None = None) -> GateRecord:
    return GateRecord(
        name="g", type=GateType.ERROR_RATE, verdict=verdict, samples=samples, units=units
    )


def test_passing_needs_an_enforced_gate_and_data_behind_each_verdict() -> None:
    good = _result(GateVerdict.SUCCESSFUL, samples=400, units=400)
    assert passed_on_evidence([good])
    assert not passed_on_evidence([])  # all([]) is True: the hole this closes
    assert not passed_on_evidence([good, _result(GateVerdict.INCONCLUSIVE, None)])
    # A Successful verdict that judged nothing (a hand-written status) is no evidence.
    assert not passed_on_evidence([_result(GateVerdict.SUCCESSFUL, samples=None)])


def test_manual_analysis_still_waits_for_a_person_without_enforced_gates() -> None:
    """Manual analyses enforce nothing by design: the person's action decides (not a pass)."""
    spec = _nothing_enforced(make_spec(manual=True))
    status = _analyzing(spec)
    for seconds in (31, 46, 61, 76, 91):
        status = run(spec, status, _empty(spec, status), seconds).status
    assert status.phase is Phase.PAUSED


def _clean(seed: int, tpot: float) -> LatencySamples:
    """A clean side: 20,000 chunk gaps, 600 requests' TPOT near `tpot`, 5,000 ok requests."""
    rng = random.Random(seed)
    itl = [rng.lognormvariate(-3.5, 0.3) for _ in range(20_000)]
    per_request = [tpot * rng.uniform(0.9, 1.1) for _ in range(600)]
    return blocked_samples(itl, time_per_output_token=per_request, requests_ok=5000)


def test_speculation_turned_off_through_git_is_judged_by_the_default_stages() -> None:
    """Plain decoding ("none" in the method-neutral gates' methods) is judged on the tail and
    the speedup in both default stages: it is promoted on evidence, never on none."""
    spec = make_spec(speculative=None, stages=default_stages())
    promoted = RolloutState(
        phase=Phase.PROMOTED,
        stable_speculative=setting_of(EAGLE3),
        stable_fingerprint=fingerprint_of(EAGLE3),
        candidate_speculative=setting_of(EAGLE3),
        candidate_fingerprint=fingerprint_of(EAGLE3),
    )
    status = run(spec, promoted, observe(production=ready(EAGLE3)), 0).status
    assert status.phase is Phase.DEPLOYING, status.message
    final = status
    for seconds in range(1, 1400, 15):
        stage = StageObservations(stage_name=final.current_stage or "acceptance")
        if seconds > 1:  # evidence from the second look on: the candidate is faster
            stage = stage_obs(stage.stage_name, baseline=_clean(1, 0.05), candidate=_clean(2, 0.04))
        looked = observe(
            production=ready(EAGLE3), baseline=ready(EAGLE3), candidate=ready(None), stage=stage
        )
        final = run(spec, final, looked, seconds).status
        if final.phase is not Phase.ANALYZING and seconds > 1:
            break
    assert final.phase is Phase.PROMOTING, final.message
    judged = {f"{s.name}/{g.name}" for s in final.stages for g in s.gates if g.samples}
    assert {"acceptance/p99-itl", "acceptance/tpot-speedup", "tail-latency/p99-itl"} <= judged
