"""The source of a `workloadRef` rollout: read it, say when it cannot be judged.

Why every reconcile: the source's template and config decide the baseline, its pods
Verified. `resolve` (the one place) fills `model` and `engine` from its vLLM container; a
source that differs from the values given, or cannot be judged, makes the rollout Degraded
(`WorkloadUnavailable`, naming what differs) and no shadow is rendered from it.
More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from specdecode.adapters.kube.workload import owns_args, read_source
from specdecode.adapters.source_facts import source_facts
from specdecode.adapters.workload_source import Source, observe_source, production_deployment
from specdecode.api import SpecDecodeRolloutSpec, WrittenRolloutSpec
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.source_boundary import resolve_spec

__all__ = ["Resolved", "Source", "production_deployment", "read_source", "resolve"]


@dataclass(frozen=True)
class Resolved:
    """The spec every step after observing reads, and the source it was read from; or,
    with `spec` None, why it could not be resolved (`problem`, about `source_name`)."""

    spec: SpecDecodeRolloutSpec | None
    source: Source | None = None
    problem: str | None = None
    source_name: str = ""


async def resolve(
    runtime: Runtime, namespace: str, rollout: str, written: WrittenRolloutSpec, manager: str
) -> Resolved:
    """The resolved spec (`source_boundary.resolve_spec`) and, with a workloadRef, its source
    read once (a GET and a Service LIST); `manager`: the promotion's field manager."""
    ref = written.workload_ref
    if ref is None:
        spec = resolve_spec(written, None)
        if isinstance(spec, str):  # cannot happen: the written rules require model and engine
            return Resolved(None, problem=spec, source_name="")
        return Resolved(spec)
    deployment, services = await asyncio.to_thread(read_source, runtime.kube, namespace, ref.name)
    name = f"Deployment/{ref.name}"
    spec = resolve_spec(written, source_facts(deployment, ref))
    if isinstance(spec, str):
        return Resolved(None, problem=spec, source_name=name)
    template = ((deployment or {}).get("spec") or {}).get("template") or {}
    observed = replace(
        observe_source(rollout, spec, deployment, services),
        promotion_applied=owns_args(deployment, manager),
    )
    generation = int(((deployment or {}).get("metadata") or {}).get("generation") or 0)
    return Resolved(spec, Source(observed, template, generation=generation), source_name=name)
