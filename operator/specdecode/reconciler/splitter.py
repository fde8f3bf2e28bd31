"""Mirror traffic with Splitter pairing: the stage run's splitter, kept and read per look.

Why: while a stage runs the rollout owns one splitter Deployment (`adapters.load.splitter`),
deleted at any other time; its Service lives as long as the spec asks for Splitter pairing,
so a user's own mirror points at a stable name. It is pushed engine pod addresses like the
load pods, and read per look in their report protocol, so the gates judge the same
statistics as under Prompts traffic. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from specdecode.adapters.kube.cache import JsonObject, named
from specdecode.adapters.kube.children import delete_children, stale_objects
from specdecode.adapters.kube.endpoints import ready_engine_endpoints
from specdecode.adapters.kube.findings import Found
from specdecode.adapters.kube.load_pods import current_pods, observed_splitter_pods
from specdecode.adapters.kube.load_token import token_for_new_pods, usable_load_token
from specdecode.adapters.kube.owned import apply_children, owner_uids
from specdecode.adapters.load.reports import push_endpoints
from specdecode.adapters.load.splitter import (
    SPLITTER_ROLE,
    render_splitter,
    render_splitter_service,
    uses_splitter,
)
from specdecode.adapters.render import Owner
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.child_names import splitter_name
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.observations import SHADOW_ROLES
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.splitter_reports import observe_splitter_pods

__all__ = ["observe_splitter_pods", "sync_splitter", "uses_splitter"]


async def sync_splitter(
    runtime: Runtime,
    owner: Owner,
    spec: SpecDecodeRolloutSpec | None,
    plan: TrafficPlan | None,
    found: Found | None = None,
) -> None:
    """Make the rollout's splitter exactly the one `plan` wants (none when it wants none);
    what stands in its way goes to `found` (`adapters.kube.findings`)."""
    found = found if found is not None else Found()
    name = splitter_name(owner.name)
    deployments = runtime.cluster.rollout_deployments(owner.namespace, owner.name)
    services = runtime.cluster.rollout_services(owner.namespace, owner.name)
    if plan is None or spec is None or not uses_splitter(spec):
        # Between stages a Splitter rollout keeps its Service (a user's own mirror points
        # at it; with no endpoints, the mirror's copies fail and the gateway drops them).
        keep_service = spec is not None and uses_splitter(spec)
        doomed = [
            (kind, name)
            for kind, objects in (("Deployment", deployments), ("Service", services))
            if not (keep_service and kind == "Service")
            and (held := named(objects, name)) is not None
            and not (held.get("metadata") or {}).get("deletionTimestamp")
            and owner.uid in owner_uids(held)
        ]
        if doomed:
            await asyncio.to_thread(delete_children, runtime.kube, owner.namespace, doomed)
        if keep_service:
            await _keep_service(runtime, owner, services, found)
        return
    rendered = render_splitter(owner, spec, plan, runtime.settings.load_image)
    observed = [*deployments, *services]
    stale = stale_objects(rendered, observed)
    if stale:
        tokens = runtime.load_cache.tokens
        if not await token_for_new_pods(runtime.kube, tokens, owner, found.load_token):
            return
        manager = runtime.settings.field_manager
        foreign = await apply_children(runtime.kube, stale, manager, observed)
        if foreign:
            found.more_children(foreign)
    await _push_endpoints(runtime, owner, spec, plan, found)


async def _keep_service(
    runtime: Runtime, owner: Owner, services: Sequence[JsonObject], found: Found
) -> None:
    """Apply the splitter's Service alone where it is missing or differs."""
    stale = stale_objects([render_splitter_service(owner)], list(services))
    if not stale:
        return
    manager = runtime.settings.field_manager
    foreign = await apply_children(runtime.kube, stale, manager, list(services))
    if foreign:
        found.more_children(foreign)


async def _push_endpoints(
    runtime: Runtime, owner: Owner, spec: SpecDecodeRolloutSpec, plan: TrafficPlan, found: Found
) -> None:
    """Push the running splitter each side's ready engine addresses where they differ
    from those it uses (its reports' echo, or our last push it took). A restarted
    splitter echoes none, so it is pushed again; engine pods coming and going are watch
    events that wake the rollout, so no timer is needed."""
    key = f"{owner.namespace}/{owner.name}"
    pods = observed_splitter_pods(
        runtime.cluster.rollout_pods(owner.namespace, owner.name, SPLITTER_ROLE)
    )
    running = [p for p in current_pods(pods, plan) if p.report_url]
    echoed = runtime.load_cache.splitter_endpoints.setdefault(key, {})
    for gone in [name for name in echoed if name.split("/")[0] not in {p.name for p in running}]:
        del echoed[gone]
    if not running:
        return
    engines = runtime.cluster.rollout_pods(owner.namespace, owner.name)
    tokens = runtime.load_cache.tokens  # the Secret may be another object's since it began
    token = await usable_load_token(runtime.kube, tokens, key, owner.uid, found.load_token)
    for pod in running:
        for side in SHADOW_ROLES:
            urls = tuple(ready_engine_endpoints(engines, side, spec.engine.port))
            slot = f"{pod.name}/{side.value}"
            if echoed.get(slot) == urls or pod.report_url is None:
                continue
            if await push_endpoints(runtime.http, pod.report_url, list(urls), token, side.value):
                echoed[slot] = urls
