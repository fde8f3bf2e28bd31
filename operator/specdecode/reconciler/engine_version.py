"""The vLLM release check of one reconcile: the engines' GET /version against the release
the rollout's config was validated for; a mismatch turns Degraded on (see
`domain.engine_version`). Kept apart from `reconcile` so the check is one call there."""

from __future__ import annotations

from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.decision import Decision
from specdecode.domain.engine_version import with_version_check
from specdecode.reconciler.apply import RolloutRef
from specdecode.reconciler.runtime import Runtime


async def with_engine_version_check(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    old: SpecDecodeRolloutStatus,
    decision: Decision,
) -> Decision:
    """`decision`, its status with Degraded=True while a ready engine pod runs another
    vLLM release than the one the spec was validated for."""
    pods = runtime.cluster.rollout_pods(ref.namespace, ref.name)
    versions = runtime.engine_versions
    running = await versions.running_versions(runtime.http, ref.key, pods, spec.engine.port)
    expected = spec.engine.effective_vllm_version
    checked = with_version_check(old, decision.status, expected, running, runtime.clock.now())
    return decision.with_status(checked)
