"""Mirror traffic with Splitter pairing, observed: a look reads the splitter's reports.

A look reads the splitter pod of the current stage run once per side, in the load pods'
report protocol, and combines each side's blocks as it would a one-shard load pod's
(`domain.load_window`): the gates judge the same statistics as under Prompts traffic.
The read itself is the load pods' (`reconciler.report_windows`).
Each report's echo of the engine addresses the splitter uses is kept for the apply's push
(`reconciler.splitter`).
"""

from __future__ import annotations

from specdecode.adapters.kube.load_pods import LoadPod, observed_splitter_pods
from specdecode.adapters.kube.rollouts import RolloutRef
from specdecode.adapters.load.splitter import SPLITTER_ROLE
from specdecode.adapters.load.windows import Window
from specdecode.domain.decision import TrafficPlan
from specdecode.reconciler.report_windows import read_windows
from specdecode.reconciler.runtime import Runtime


async def splitter_windows(
    runtime: Runtime, ref: RolloutRef, plan: TrafficPlan, since: float, now: float
) -> tuple[Window, Window]:
    """A look's (baseline, candidate) windows from the rollout's splitter (observe's step)."""
    pods = observe_splitter_pods(runtime, ref.namespace, ref.name)
    return await read_windows(runtime, ref.key, plan, pods, since, now, ref.uid, splitter=True)


def observe_splitter_pods(runtime: Runtime, namespace: str, rollout: str) -> list[LoadPod]:
    """The rollout's splitter pods, from the watched cache."""
    pods = runtime.cluster.rollout_pods(namespace, rollout, SPLITTER_ROLE)
    return observed_splitter_pods(pods)
