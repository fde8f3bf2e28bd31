"""A look's (baseline, candidate) windows, read from the pods that report them.

Load pods (Prompts traffic) and the splitter (Mirror traffic, Splitter pairing) speak one
report protocol, and a look reads them alike: the stage run's pods, the rollout's load
token, then each side concurrently (`adapters.load.windows`). Each report's echo of the
engine endpoints a pod uses is kept, per reporter kind, for the apply's push.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from specdecode.adapters.kube.load_pods import LoadPod, current_pods
from specdecode.adapters.kube.load_token import usable_load_token
from specdecode.adapters.load.windows import Window, load_pods_side, splitter_side
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.observations import SHADOW_ROLES
from specdecode.reconciler.runtime import Runtime


async def read_windows(
    runtime: Runtime,
    rollout: str,
    plan: TrafficPlan,
    pods: Sequence[LoadPod],
    since: float,
    now: float,
    uid: str = "",
    *,
    splitter: bool = False,
) -> tuple[Window, Window]:
    """(baseline, candidate) windows of the stage run from its load pods' reports, or
    its splitter's (`splitter`). `rollout` is the rollout's "namespace/name", `uid` its
    uid: the owner of its token. The echoes go to `sync_load_pods` or `sync_splitter`."""
    current = current_pods(pods, plan)
    tokens = runtime.load_cache.tokens
    token = await usable_load_token(runtime.kube, tokens, rollout, uid) if current else None
    if splitter:
        echoed = runtime.load_cache.splitter_endpoints.setdefault(rollout, {})
        sides = (
            splitter_side(runtime.http, side, current, since, now, token, echoed)
            for side in SHADOW_ROLES
        )
    else:
        echoed = runtime.load_cache.endpoints.setdefault(rollout, {})
        sides = (
            load_pods_side(runtime.http, plan, side, current, since, now, echoed, token)
            for side in SHADOW_ROLES
        )
    windows = await asyncio.gather(*sides)
    return windows[0], windows[1]
