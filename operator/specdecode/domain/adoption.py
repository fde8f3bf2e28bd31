"""A rollout that judges a Deployment another tool owns (`spec.workloadRef`, GitOps).

Pure rules around `machine.decide`: production is the source (the stable config is what it
runs); a source change mid-analysis restarts it (`SourceChanged`); under GitOps nothing is
written to the source and the passed config waits in Promoting for the owner.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import json
from datetime import datetime

import yaml

from specdecode.domain.observations import Observations
from specdecode.domain.rollout_settings import RolloutSettings
from specdecode.domain.rollout_state import ConditionRecord, RolloutState
from specdecode.domain.source import SourceObservation
from specdecode.domain.source_spec import in_force
from specdecode.domain.speculative_setting import SpeculativeSetting
from specdecode.domain.transitions import (
    ANALYSIS_PHASES,
    Step,
    analyse_desired_unless_stable,
    describe,
    enter,
)
from specdecode.speculative_document import fingerprint_of
from specdecode.vocabulary import ConditionStatus, Phase, PromotionStrategy

AWAITING_OWNER = "AwaitingOwner"
VERIFIED = "Verified"
# Phases in which the source's config is the stable one (no promotion of ours is pending
# or in force). After an analysis ended, not while the source holds the Patch strategy's
# own apply: the reconciler returns that to the stable config (`promotion_patch`).
_FOLLOWS_SOURCE = frozenset(
    {Phase.PENDING, Phase.DEPLOYING, Phase.ANALYZING, Phase.PAUSED, Phase.ROLLED_BACK, Phase.FAILED}
)
_JUDGING = frozenset({Phase.ANALYZING, Phase.PAUSED})


def judgeable_source(
    settings: RolloutSettings, source: SourceObservation | None
) -> SourceObservation | None:
    """The source when the rollout has one and it can be judged, else None."""
    if not settings.adopted or source is None or source.problem is not None:
        return None
    return source


def sync_with_source(
    settings: RolloutSettings,
    desired: SpeculativeSetting | None,
    status: RolloutState,
    source: SourceObservation,
    now: datetime,
) -> Step:
    """Rules 1 and 2: the stable config and the template are the source's (`desired`: the
    spec's config, analysed anew when they change mid-analysis)."""
    before = status.workload
    workload = in_force(settings, source.name).model_copy(
        update={
            "template_hash": source.template_hash,
            "dropped_labels": list(source.dropped_labels),
            "owner_patch": before.owner_patch if before else None,
            "verified_at": before.verified_at if before else None,
        }
    )
    update: dict[str, object] = {"workload": workload}
    ours = settings.strategy is PromotionStrategy.PATCH and source.promotion_applied
    follows = status.phase in _FOLLOWS_SOURCE and not (
        ours and status.phase in _ENDED_WITHOUT_PROMOTION
    )
    stable_changed = follows and fingerprint_of(source.speculative) != fingerprint_of(
        status.stable_speculative
    )
    if stable_changed:
        update["stable_speculative"] = source.speculative
        update["stable_fingerprint"] = fingerprint_of(source.speculative)
    template_changed = (
        before is not None
        and before.template_hash is not None
        and before.template_hash != source.template_hash
    )
    status = status.model_copy(update=update)
    if status.phase in ANALYSIS_PHASES and (stable_changed or template_changed):
        message = (
            f"{source.name}'s pod template changed (it runs {describe(source.speculative)}); "
            "the analysis restarts on the new baseline"
        )
        return analyse_desired_unless_stable(
            settings, desired, status, now, "SourceChanged", message
        )
    return Step(status)


def restart_if_source_unjudgeable(
    settings: RolloutSettings,
    desired: SpeculativeSetting | None,
    status: RolloutState,
    source: SourceObservation | None,
    now: datetime,
) -> Step | None:
    """A source that can no longer be judged (its image bumped past the rollout's, a
    Service now selecting a shadow...) during an analysis: the analysis restarts, its
    shadows go (the reconciler renders none), and it waits for the source in Deploying."""
    if not settings.adopted or source is None or source.problem is None:
        return None
    if status.phase not in _JUDGING:
        return None
    message = f"{source.problem}; the analysis restarts once the source can be judged"
    return analyse_desired_unless_stable(
        settings, desired, status, now, "SourceUnjudgeable", message
    )


def awaiting_owner(
    settings: RolloutSettings,
    status: RolloutState,
    source: SourceObservation | None,
    now: datetime,
) -> Step:
    """Rule 3, in Promoting under GitOps or Patch: say once what must be applied, then wait."""
    if status.reason == AWAITING_OWNER:
        return Step(status)
    passed = f"{describe(status.candidate_speculative)} passed"
    if source is None:
        message = f"{passed}; the source cannot be judged now (see Degraded): its patch follows"
        return enter(status, Phase.PROMOTING, now, AWAITING_OWNER, message)
    name = source.name
    if settings.strategy is PromotionStrategy.PATCH:
        message = (
            f"{passed}; applying status.workload.ownerPatch to {name} (server-side, its own "
            "field manager, never forced); on a conflict its owner applies it"
        )
    else:
        message = (
            f"{passed}; waiting for the owner of {name} to apply status.workload.ownerPatch "
            "(kubectl specdecode patch <rollout>)"
        )
    return enter(status, Phase.PROMOTING, now, AWAITING_OWNER, message)


def patched(settings: RolloutSettings, status: RolloutState, observations: Observations) -> bool:
    """Under Patch, whether the source's template already runs the candidate (our apply
    landed): production is then rolling to it, on the Owned promotion's deadline."""
    source = observations.source
    return (
        settings.strategy is PromotionStrategy.PATCH
        and source is not None
        and fingerprint_of(source.speculative) == status.candidate_fingerprint
    )


def args_running(
    base_args: tuple[str, ...] | list[str], config: SpeculativeSetting | None
) -> list[str]:
    """A vLLM container's args without any speculative setting (`base_args`, as
    `api.engine_args.without_speculative` leaves them) running `config`: what a shadow runs,
    what the owner's patch sets, what Patch applies."""
    out = list(base_args)
    return out if config is None else [*out, "--speculative-config", config.to_cli_json()]


def owner_patch(source: SourceObservation, config: SpeculativeSetting | None) -> str:
    """The strategic-merge patch of the source that makes it run `config` (JSON): its vLLM
    container's args (one atomic list in a Deployment, so the patch carries them whole)."""
    container = {"name": source.container, "args": args_running(source.base_args, config)}
    patch = {"spec": {"template": {"spec": {"containers": [container]}}}}
    return json.dumps(patch, sort_keys=True)


# Phases after an analysis that did not promote: the source must run the stable config.
_ENDED_WITHOUT_PROMOTION = frozenset({Phase.ROLLED_BACK, Phase.FAILED})


def patch_write(
    strategy: PromotionStrategy, status: RolloutState, source: SourceObservation
) -> list[str] | None:
    """Under Patch (`strategy`), the args the operator's apply must hold now, or None to
    write nothing: the candidate's while Promoting and not yet in the template; after an
    analysis that did not promote, the stable config's while the source still holds our
    apply (an empty list: withdraw, nothing of the owner's was in args)."""
    if strategy is not PromotionStrategy.PATCH:
        return None
    runs = fingerprint_of(source.speculative)
    if status.phase is Phase.PROMOTING and runs != status.candidate_fingerprint:
        return args_running(source.base_args, status.candidate_speculative)
    if (
        status.phase in _ENDED_WITHOUT_PROMOTION
        and source.promotion_applied
        and runs != status.stable_fingerprint
    ):
        return args_running(source.base_args, status.stable_speculative)
    return None


def owner_patch_files(source: str, namespace: str, patch: str) -> dict[str, str]:
    """The passed config's change in the forms an owner commits: the strategic-merge patch
    (`kubectl patch --type strategic -p`) and a kustomize patch file (it names the
    Deployment), keyed as the promotion ConfigMap and `kubectl specdecode patch` give them."""
    head = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": source.split("/", 1)[-1], "namespace": namespace},
    }
    kustomize = yaml.safe_dump({**head, **json.loads(patch)}, sort_keys=False)
    return {"strategic-merge-patch.json": patch, "kustomize-patch.yaml": kustomize}


def with_owner_view(
    settings: RolloutSettings,
    status: RolloutState,
    source: SourceObservation | None,
    now: datetime,
) -> RolloutState:
    """The patch while Promoting (kept once Promoted), and the Verified condition."""
    if settings.strategy is PromotionStrategy.OWNED or status.workload is None:
        return status
    workload = status.workload
    if status.phase is Phase.PROMOTING and source is not None:
        workload = workload.model_copy(
            update={"owner_patch": owner_patch(source, status.candidate_speculative)}
        )
    elif status.phase is Phase.PROMOTED:
        workload = workload.model_copy(update={"verified_at": workload.verified_at or now})
    elif status.phase is not Phase.DEGRADED:
        workload = workload.model_copy(update={"owner_patch": None, "verified_at": None})
    conditions = [c for c in status.conditions if c.type != VERIFIED]
    if status.phase is Phase.PROMOTED and workload.verified_at is not None:
        conditions.append(
            ConditionRecord(
                type=VERIFIED,
                status=ConditionStatus.TRUE,
                reason="SourceRunsPromotedConfig",
                message=f"{workload.source} runs {describe(status.stable_speculative)}",
                last_transition_time=workload.verified_at,
                observed_generation=status.observed_generation,
            )
        )
    return status.model_copy(update={"workload": workload, "conditions": conditions})
