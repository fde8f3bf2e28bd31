"""The Patch promotion strategy: the operator applies the passed config to the source itself.

Why a non-forced server-side apply of the vLLM container's args under our own field
manager: another manager's ownership shows as a conflict, kept in `status.applyFindings`
(not re-sent until the source changes) and shown as Degraded `PatchConflict`; the rollout
then awaits the owner. An analysis ending without a promotion returns our apply to the
stable config, or withdraws it. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import MappingProxyType

from specdecode.adapters.kube.findings import Found
from specdecode.adapters.kube.rollouts import RolloutRef
from specdecode.adapters.kube.workload import (
    apply_promotion,
    drop_promotion_files,
    keep_promotion_files,
    promotion_field_manager,
    withdraw_promotion,
)
from specdecode.adapters.workload_source import Source
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.adoption import PromotionStrategy
from specdecode.api.status import Phase
from specdecode.domain.adoption import owner_patch_files, patch_write
from specdecode.domain.apply_findings import CONFLICT, with_patch_conflict
from specdecode.domain.rollout_state import RolloutState
from specdecode.reconciler.runtime import Runtime

__all__ = [
    "CONFLICT",
    "keep_files",
    "patch_source",
    "promotion_manager",
    "with_patch_conflict",
    "write_promotion",
]


def promotion_manager(runtime: Runtime) -> str:
    """The field manager of the promotion apply: apart from the children's, so the
    source's managedFields show exactly what the promotion set."""
    return promotion_field_manager(runtime.settings.field_manager)


async def patch_source(
    runtime: Runtime,
    key: str,
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    source: Source | None,
    found: Found,
) -> None:
    """Write what `domain.adoption.patch_write` decides: the candidate's args (Promoting),
    or, after an analysis that did not promote, the stable config's (an apply withdrawn
    when none of the owner's were in args)."""
    if source is None or not source.judged:
        return
    args = patch_write(spec.strategy, status, source.observation)
    if args is None:
        return
    ref = spec.workload_ref
    assert ref is not None
    manager = promotion_manager(runtime)
    namespace, container = key.split("/", 1)[0], source.observation.container
    if status.phase is Phase.PROMOTING:
        refused = status.apply_findings
        if refused is not None and refused.patch_refused_generation == source.generation:
            return  # refused at this generation: the owner's turn until the source changes
        conflict = await asyncio.to_thread(
            apply_promotion, runtime.kube, namespace, ref.name, container, args, manager
        )
        found.patch(None if conflict is None else (source.generation, conflict))
        return
    if args:  # our args, now with the stable config
        await asyncio.to_thread(
            apply_promotion, runtime.kube, namespace, ref.name, container, args, manager
        )
    else:  # nothing of the owner's was in args: withdrawing leaves the source as it was
        await asyncio.to_thread(withdraw_promotion, runtime.kube, namespace, ref.name, manager)
    found.patch(None)


async def keep_files(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    standing: Mapping[str, str] | None,
    found: Found,
) -> None:
    """The passed config's change, also as the ConfigMap `<rollout>-promotion` (for tools
    that read ConfigMaps): written when what `standing` (ours in the cluster, as observed)
    holds differs, never over an object of that name the rollout does not own (Degraded
    ChildNotOwned, as for children), and deleted once its patch no longer stands, also by
    a process that did not write it (observe reads the cluster's copy)."""
    workload = status.workload
    known = runtime.write_echo.promotion_files
    if spec.strategy is PromotionStrategy.OWNED or workload is None or not workload.owner_patch:
        if standing is not None:  # ours, and stale now
            await asyncio.to_thread(drop_promotion_files, runtime.kube, ref.owner)
            known[ref.key] = None
        found.promotion_files(None)
        return
    files = owner_patch_files(workload.source, ref.namespace, workload.owner_patch)
    if standing is not None and dict(standing) == files:
        return
    foreign = await asyncio.to_thread(
        keep_promotion_files, runtime.kube, ref.owner, files, promotion_manager(runtime)
    )
    found.promotion_files(foreign)
    if foreign is None:
        known[ref.key] = MappingProxyType(files)


async def write_promotion(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    source: Source | None,
    standing: Mapping[str, str] | None,
    found: Found,
) -> None:
    """The apply's promotion step: the source's args (`patch_source`), then the promotion
    ConfigMap (`keep_files`; `standing`: what the cluster holds of ours)."""
    await patch_source(runtime, ref.key, spec, status, source, found)
    await keep_files(runtime, ref, spec, status, standing, found)
