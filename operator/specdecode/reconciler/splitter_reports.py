"""Mirror traffic with Splitter pairing, observed: a look reads the splitter's reports.

A look reads the splitter pod of the current stage run once per side, in the load pods'
report protocol, and combines each side's blocks as it would a one-shard load pod's
(`domain.load_window`): the gates judge the same statistics as under Prompts traffic.
Each report's echo of the engine addresses the splitter uses is kept for the apply's push
(`reconciler.splitter`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from specdecode.adapters.kube.load_pods import LoadPod, current_pods, observed_splitter_pods
from specdecode.adapters.kube.load_token import usable_load_token
from specdecode.adapters.kube.rollouts import RolloutRef
from specdecode.adapters.load.pods import SIDES
from specdecode.adapters.load.splitter import SPLITTER_ROLE
from specdecode.adapters.load.windows import Window, splitter_side
from specdecode.domain.decision import TrafficPlan
from specdecode.reconciler.runtime import Runtime


async def splitter_windows(
    runtime: Runtime, ref: RolloutRef, plan: TrafficPlan, since: float, now: float
) -> tuple[Window, Window]:
    """A look's (baseline, candidate) windows from the rollout's splitter (observe's step)."""
    pods = observe_splitter_pods(runtime, ref.namespace, ref.name)
    return await read_splitter_windows(runtime, ref.key, plan, pods, since, now, ref.uid)


def observe_splitter_pods(runtime: Runtime, namespace: str, rollout: str) -> list[LoadPod]:
    """The rollout's splitter pods, from the watched cache."""
    pods = runtime.cluster.rollout_pods(namespace, rollout, SPLITTER_ROLE)
    return observed_splitter_pods(pods)


async def read_splitter_windows(
    runtime: Runtime,
    rollout: str,
    plan: TrafficPlan,
    pods: Sequence[LoadPod],
    since: float,
    now: float,
    uid: str = "",
) -> tuple[Window, Window]:
    """(baseline, candidate) windows of the stage run from its splitter's reports
    (`rollout`: "namespace/name"; `uid`: the owner of its token)."""
    current = current_pods(pods, plan)
    tokens = runtime.load_cache.tokens
    token = await usable_load_token(runtime.kube, tokens, rollout, uid) if current else None
    echoed = runtime.load_cache.splitter_endpoints.setdefault(rollout, {})
    windows = await asyncio.gather(
        *(splitter_side(runtime.http, side, current, since, now, token, echoed) for side in SIDES)
    )
    return windows[0], windows[1]
