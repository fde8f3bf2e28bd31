"""The vLLM release check's read: each ready engine pod's GET /version (asked once per pod,
`adapters.engine_version`). A release other than the one the rollout's config was
validated for turns Degraded on (`domain.engine_version`, judged in `decide_pass`)."""

from __future__ import annotations

from specdecode.adapters.kube.rollouts import RolloutRef
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.engine_version import RunningVersion
from specdecode.reconciler.runtime import Runtime


async def observe_engine_versions(
    runtime: Runtime, ref: RolloutRef, spec: SpecDecodeRolloutSpec
) -> tuple[RunningVersion, ...]:
    """The release each ready engine pod of the rollout runs (those that answered)."""
    pods = runtime.cluster.rollout_pods(ref.namespace, ref.name)
    versions = runtime.engine_versions
    running = await versions.running_versions(runtime.http, ref.key, pods, spec.engine.port)
    return tuple(running)
