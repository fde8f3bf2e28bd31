"""The vLLM release check of one reconcile: the engines' GET /version against the release
the rollout's config was validated for; a mismatch turns Degraded on (see
`domain.engine_version`). Kept apart from `reconcile` so the check is one call there."""

from __future__ import annotations

from specdecode.adapters.engine_version import EngineVersionSource, HttpEngineVersions
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.engine_version import with_version_check
from specdecode.reconciler.runtime import Runtime


async def with_engine_version_check(
    runtime: Runtime,
    namespace: str,
    rollout: str,
    spec: SpecDecodeRolloutSpec,
    old: SpecDecodeRolloutStatus,
    new: SpecDecodeRolloutStatus,
    source: EngineVersionSource | None = None,
) -> SpecDecodeRolloutStatus:
    """`new`, with Degraded=True while a ready engine pod runs another vLLM release."""
    versions = source if source is not None else HttpEngineVersions(runtime.kube)
    running = await versions.running_versions(namespace, rollout, spec.engine.port)
    expected = spec.engine.effective_vllm_version
    return with_version_check(old, new, expected, running, runtime.clock.now())
