"""The source of a `workloadRef` rollout: read it, say when it cannot be judged.

Read every reconcile (a GET and a Service LIST, `adapters.kube.workload`): its template
and config decide the baseline, and its pods running the passed config decide Verified.
A source that is absent, has no vLLM container, or does not match the rollout's model,
image or port makes the rollout Degraded (`WorkloadUnavailable`, naming what differs), a
condition over the phase as for other problems found outside the state machine; no shadow
is rendered from it, so an analysis that cannot start runs into its progress deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from specdecode.adapters.kube.workload import owns_args, read_source
from specdecode.adapters.workload_source import observe_source
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.decision import Decision
from specdecode.domain.degraded import with_degraded
from specdecode.domain.source import SourceObservation
from specdecode.reconciler.runtime import Runtime

UNAVAILABLE = "WorkloadUnavailable"


@dataclass(frozen=True)
class Source:
    """The source as observed, and its pod template (what shadows are copies of)."""

    observation: SourceObservation
    template: Mapping[str, Any]
    generation: int = 0

    @property
    def judged(self) -> bool:
        """Whether it can be judged (no problem found)."""
        return self.observation.problem is None


async def read_workload(
    runtime: Runtime, namespace: str, rollout: str, spec: SpecDecodeRolloutSpec, manager: str
) -> Source | None:
    """The rollout's source, None without a workloadRef; `manager`: the promotion's."""
    ref = spec.workload_ref
    if ref is None:
        return None
    deployment, services = await asyncio.to_thread(read_source, runtime.kube, namespace, ref.name)
    template = ((deployment or {}).get("spec") or {}).get("template") or {}
    observed = replace(
        observe_source(rollout, spec, deployment, services),
        promotion_applied=owns_args(deployment, manager),
    )
    generation = int(((deployment or {}).get("metadata") or {}).get("generation") or 0)
    return Source(observed, template, generation=generation)


def production_deployment(rollout: str, spec: SpecDecodeRolloutSpec) -> str:
    """The Deployment production runs as: the source, else the rollout's own `<name>`."""
    return spec.workload_ref.name if spec.workload_ref is not None else rollout


def with_source_problem(
    runtime: Runtime, old: SpecDecodeRolloutStatus, decision: Decision, source: Source | None
) -> Decision:
    """`decision`, Degraded=True while the source cannot be judged."""
    if source is None or source.judged:
        return decision
    message = f"{source.observation.problem}; no shadow is rendered until it can be judged"
    status = with_degraded(old, decision.status, UNAVAILABLE, message, runtime.clock.now())
    return decision.with_status(status)
