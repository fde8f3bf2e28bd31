"""A rollout that judges a Deployment another tool owns (workloadRef, GitOps): the domain.

The source's config is the stable one (so the baseline copies production), a changed
source template restarts an analysis, a passed config waits for the owner with the exact
patch and no deadline, and the source's pods running it make the rollout Promoted with
Verified.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from domain_fixtures import EAGLE3, NGRAM, make_spec, observe, ready, run, shadows_ready, status_in

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import Phase, SpecDecodeRolloutSpec
from specdecode.api.adoption import PromotionSpec, PromotionStrategy, WorkloadRef
from specdecode.api.engine_args import without_speculative
from specdecode.api.speculative import SpeculativeConfig, fingerprint_of
from specdecode.domain.decision import Decision
from specdecode.domain.observations import ChildRole, ChildState
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.source import SourceObservation

pytestmark = pytest.mark.unit

ARGS = ("meta-llama/Llama-3.1-8B-Instruct", "--port", "8000", "--max-num-seqs", "64")


def adopted_spec(**changes: Any) -> SpecDecodeRolloutSpec:
    spec = make_spec(manual=True)
    return spec.model_copy(update={"workload_ref": WorkloadRef(name="chat"), **changes})


def source(
    config: SpeculativeConfig | None = None, template: str = "t1", args: tuple[str, ...] = ARGS
) -> SourceObservation:
    return SourceObservation(
        "Deployment/chat",
        state=ready(config),
        speculative=setting_of(config),
        template_hash=template,
        dropped_labels=("app",),
        base_args=tuple(without_speculative(args)),  # as `observe_source` leaves them
    )


def step(
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    src: SourceObservation,
    seconds: float = 0,
    action: str | None = None,
    **children: ChildState,
) -> Decision:
    """One decision with production being the source, as the reconciler observes it."""
    observed = observe(
        baseline=children.get("baseline"), candidate=children.get("candidate"), action=action
    )
    observed.children[ChildRole.PRODUCTION] = src.state
    return run(spec, status, replace(observed, source=src), seconds)


def analysing(spec: SpecDecodeRolloutSpec, src: SourceObservation) -> RolloutState:
    first = step(spec, RolloutState(), src).status
    stable = src.speculative
    second = step(spec, first, src, baseline=ready(stable), candidate=ready(EAGLE3)).status
    assert second.phase is Phase.ANALYZING, second
    return second


def test_the_stable_config_is_what_the_source_runs_so_the_baseline_copies_it() -> None:
    spec = adopted_spec()
    decision = step(spec, RolloutState(), source(NGRAM))
    assert decision.status.stable_speculative == setting_of(NGRAM)
    assert decision.children.baseline == setting_of(NGRAM)
    assert decision.children.candidate == setting_of(EAGLE3)
    assert decision.status.workload is not None
    assert decision.status.workload.dropped_labels == ["app"]


def test_a_changed_source_template_mid_analysis_restarts_the_analysis() -> None:
    spec = adopted_spec()
    status = analysing(spec, source())
    again = step(
        spec, status, source(template="t1"), 5, baseline=ready(None), candidate=ready(EAGLE3)
    )
    assert again.status.phase is Phase.ANALYZING  # unchanged source: no restart
    changed = step(spec, status, source(template="t2"), 5, baseline=ready(None))
    assert changed.status.phase is Phase.DEPLOYING
    assert [e.reason for e in changed.events] == ["SourceChanged"]
    assert changed.status.workload is not None
    assert changed.status.workload.template_hash == "t2"


def promoting(spec: SpecDecodeRolloutSpec) -> RolloutState:
    status = analysing(spec, source())
    decision = step(
        spec, status, source(), 10, baseline=ready(None), candidate=ready(EAGLE3), action="promote"
    )
    assert decision.status.phase is Phase.PROMOTING, decision.status
    return decision.status


def test_a_passed_config_waits_for_the_owner_with_the_patch_and_no_deadline() -> None:
    spec = adopted_spec()
    status = promoting(spec)
    assert status.reason == "AwaitingOwner"
    assert status.workload is not None and status.workload.owner_patch is not None
    patch = json.loads(status.workload.owner_patch)
    container = patch["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == "vllm"
    assert container["args"] == [*ARGS, "--speculative-config", EAGLE3.to_cli_json()]
    much_later = step(spec, status, source(), 10 * 86400)  # an Owned rollout would revert
    assert much_later.status.phase is Phase.PROMOTING
    assert much_later.events == ()


def test_the_patch_replaces_a_speculative_setting_in_any_spelling() -> None:
    spec = adopted_spec()
    args = (*ARGS, "--speculative_config", NGRAM.to_cli_json())
    status = analysing(spec, source(NGRAM, args=args))
    decision = step(
        spec,
        status,
        source(NGRAM, args=args),
        10,
        baseline=ready(NGRAM),
        candidate=ready(EAGLE3),
        action="promote",
    )
    assert decision.status.workload is not None
    patch = json.loads(decision.status.workload.owner_patch or "{}")
    args_out = patch["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args_out == [*ARGS, "--speculative-config", EAGLE3.to_cli_json()]


def test_the_source_running_the_passed_config_is_promoted_and_verified() -> None:
    spec = adopted_spec()
    status = promoting(spec)
    decision = step(spec, status, source(EAGLE3, template="t2"), 20)
    final = decision.status
    assert final.phase is Phase.PROMOTED
    assert final.stable_speculative == setting_of(EAGLE3)
    verified = [c for c in final.conditions if c.type == "Verified"]
    assert len(verified) == 1 and verified[0].status.value == "True"
    assert "Deployment/chat runs eagle3" in verified[0].message
    assert final.workload is not None and final.workload.owner_patch is not None
    steady = step(spec, final, source(EAGLE3, template="t2"), 400)
    assert steady.status == final  # nothing changes while nothing does: no writes


def test_without_gitops_the_promotion_keeps_its_deadline() -> None:
    spec = make_spec(manual=True)
    status = status_in(spec, "Promoting")
    late = run(spec, status, shadows_ready(), 10_000)
    assert late.status.phase is Phase.ROLLED_BACK
    assert fingerprint_of(late.status.stable_speculative) == "none"


def test_under_patch_the_deadline_runs_only_once_the_patch_is_in_the_template() -> None:
    spec = adopted_spec(promotion=PromotionSpec(strategy=PromotionStrategy.PATCH))
    status = promoting(spec)
    assert status.reason == "AwaitingOwner" and "applying" in status.message
    conflicted = step(spec, status, source(), 10 * 86400)  # not patched (a conflict): waits
    assert conflicted.status.phase is Phase.PROMOTING
    rolling = SourceObservation(
        "Deployment/chat",
        state=ChildState(exists=True, config_fingerprint=EAGLE3.fingerprint(), desired_replicas=1),
        speculative=setting_of(EAGLE3),
        template_hash="t2",
        base_args=ARGS,
    )
    late = step(spec, status, rolling, 700)  # patched, its pods never Ready: the deadline
    assert late.status.phase is Phase.ROLLED_BACK
    assert late.status.reason == "PromotionFailed"


def test_a_source_that_cannot_be_judged_mid_analysis_restarts_it_without_its_copies() -> None:
    spec = adopted_spec()
    status = analysing(spec, source())
    broken = SourceObservation("Deployment/chat", problem="spec.engine.image differs")
    lost = step(spec, status, broken, 5, baseline=ready(None), candidate=ready(EAGLE3))
    assert lost.status.phase is Phase.DEPLOYING
    assert [e.reason for e in lost.events] == ["SourceUnjudgeable"]
    again = step(spec, lost.status, broken, 6, baseline=ready(None), candidate=ready(EAGLE3))
    assert again.status.phase is Phase.DEPLOYING, "stale shadows must not start a stage"
    back = step(spec, again.status, source(), 7, baseline=ready(None), candidate=ready(EAGLE3))
    assert back.status.phase is Phase.ANALYZING


def test_under_patch_an_abort_keeps_the_stable_config_the_source_must_return_to() -> None:
    spec = adopted_spec(promotion=PromotionSpec(strategy=PromotionStrategy.PATCH))
    status = promoting(spec)
    patched = source(EAGLE3, template="t2")  # our apply landed, pods rolling
    rolling = replace(
        patched, state=ChildState(exists=True, desired_replicas=1), promotion_applied=True
    )
    aborted = step(spec, status, rolling, 20, action="abort")
    assert aborted.status.phase is Phase.ROLLED_BACK
    later = step(spec, aborted.status, rolling, 30)
    assert later.status.stable_speculative is None  # not taken from our own apply
    gitops = adopted_spec()
    followed = step(gitops, aborted.status, rolling, 30)
    assert followed.status.stable_speculative == setting_of(
        EAGLE3
    )  # GitOps: whatever the owner runs
    # our apply withdrawn, the owner then runs ngram by hand: that is production now
    owners = replace(source(NGRAM, template="t3"), promotion_applied=False)
    assert step(spec, later.status, owners, 40).status.stable_speculative == setting_of(NGRAM)


def test_deploying_waits_for_an_unjudgeable_source_without_a_deadline() -> None:
    spec = adopted_spec()
    first = step(spec, RolloutState(), source()).status
    broken = SourceObservation("Deployment/chat", problem="spec.engine.image differs")
    waiting = step(spec, first, broken, 10 * 86400)
    assert waiting.status.phase is Phase.DEPLOYING and waiting.events == ()
