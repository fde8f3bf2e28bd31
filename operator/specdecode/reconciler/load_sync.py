"""Prompts traffic, applied: the stage run's load pods, kept as the decision says.

Why: each side of the planned stage run (`TrafficPlan`) gets its load pods
(`adapters.load.pods`), any other load pod of the rollout is deleted. They send to engine
pod addresses from the watched cache; a running pod is pushed a side's list only when its
reports echo another (`reconciler.load`), since an engine pod coming or going wakes the
rollout anyway. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from specdecode.adapters.kube.endpoints import ready_engine_endpoints
from specdecode.adapters.kube.findings import Found
from specdecode.adapters.kube.load_pods import LoadPod, create_pod, current_pods, delete_pod
from specdecode.adapters.kube.load_token import token_for_new_pods, usable_load_token
from specdecode.adapters.kube.prompt_source import prompt_set_problem
from specdecode.adapters.load.pods import render_load_pods, uses_load_pods
from specdecode.adapters.load.reports import push_endpoints
from specdecode.adapters.render import Owner
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.observations import SHADOW_ROLES, ChildRole
from specdecode.reconciler.runtime import Runtime

# How often a load pod whose reports do not echo its endpoints is pushed them again once
# they differ from its start-up arguments (we cannot see whether it still uses our push).
UNECHOED_PUSH_SECONDS = 15.0


async def sync_load_pods(
    runtime: Runtime,
    owner: Owner,
    spec: SpecDecodeRolloutSpec | None,
    plan: TrafficPlan | None,
    pods: Sequence[LoadPod],
    found: Found | None = None,
) -> None:
    """Make the rollout's load pods exactly those of `plan` (none when it is None); a
    load-token Secret held by another object goes to `found` (`adapters.kube.findings`).

    Pods are created only after the prompt set parsed (a bad one is reported by the next
    observation and ends the analysis as Failed), and are told of engine endpoints that
    changed since they started.
    """
    wanted = plan if uses_load_pods(spec) else None
    keep = {pod.name for pod in current_pods(pods, wanted)} if wanted is not None else set()
    for pod in pods:
        if pod.name not in keep and not pod.deleting:
            await asyncio.to_thread(delete_pod, runtime.kube, owner.namespace, pod.name)
    found = found if found is not None else Found()
    key = f"{owner.namespace}/{owner.name}"
    if wanted is None or spec is None:
        runtime.load_cache.forget_endpoints(key)
        found.load_token(None)  # no load pod wanted: nothing blocked
        return
    running = current_pods(pods, wanted)
    engines = runtime.cluster.rollout_pods(owner.namespace, owner.name)
    port = spec.engine.port
    endpoints = {side: ready_engine_endpoints(engines, side, port) for side in SHADOW_ROLES}
    if len(running) < 2 * wanted.shape.pods_per_side:
        desired = render_load_pods(owner, spec, wanted, endpoints, runtime.settings.load_image)
        absent = [wanted_pod for wanted_pod in desired if wanted_pod.name not in keep]
        traffic = spec.analysis.traffic
        if (
            absent
            and await asyncio.to_thread(prompt_set_problem, runtime.kube, owner.namespace, traffic)
            is None
        ):
            tokens = runtime.load_cache.tokens
            if not await token_for_new_pods(runtime.kube, tokens, owner, found.load_token):
                return
            for wanted_pod in absent:
                await asyncio.to_thread(create_pod, runtime.kube, wanted_pod.manifest)
    known = None
    if running:  # the Secret may have been swapped for another object's since they began
        tokens = runtime.load_cache.tokens
        known = await usable_load_token(runtime.kube, tokens, key, owner.uid, found.load_token)
    await _push_changed_endpoints(runtime, key, running, endpoints, known)


async def _push_changed_endpoints(
    runtime: Runtime,
    rollout: str,
    running: Sequence[LoadPod],
    endpoints: dict[ChildRole, list[str]],
    token: str | None,
) -> None:
    """Push each running pod its side's endpoints where they differ from those it uses.

    What a pod uses is its report's echo (kept by `reconciler.load`, updated here after a
    push it took), so one change is one push. A pod without a known echo (an older image,
    no report read since it started, or a push it did not take) is compared with its
    start-up arguments and pushed at most once per `UNECHOED_PUSH_SECONDS`.
    """
    echoed = runtime.load_cache.endpoints.setdefault(rollout, {})
    names = {pod.name for pod in running}
    for gone in [name for name in echoed if name not in names]:
        del echoed[gone]
    last = runtime.load_cache.unechoed_pushed_at.get(rollout)
    unechoed_due = last is None or time.monotonic() - last >= UNECHOED_PUSH_SECONDS
    for pod in running:
        urls = tuple(endpoints.get(ChildRole(pod.side), []))
        known = echoed.get(pod.name)
        in_use = known if known is not None else pod.endpoints
        if pod.report_url is None or urls == in_use or (known is None and not unechoed_due):
            continue
        taken = await push_endpoints(runtime.http, pod.report_url, list(urls), token)
        if taken and known is not None:
            echoed[pod.name] = urls
        else:  # unconfirmed: pushed again on the timer until its reports echo the list
            echoed.pop(pod.name, None)
            runtime.load_cache.unechoed_pushed_at[rollout] = time.monotonic()
