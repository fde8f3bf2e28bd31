"""One side's measuring window, read from the pods that measured it (a look's read).

A look reads each side concurrently; each side asks its load pods (every shard) or the
splitter for their blocks since the window began; the domain's rules combine them
(`domain.load_window`: a missing shard makes a window incomplete, no report at all is
nothing measured yet).
Each report's echo of the engine endpoints its pod uses goes to `echoed`, so the apply
pushes a pod only the endpoints it does not use.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from specdecode.adapters.kube.load_pods import LoadPod
from specdecode.adapters.load.reports import ReportUnavailable, fetch_report
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_report import LoadReport, ReportError
from specdecode.domain.load_window import shards_window, splitter_window
from specdecode.domain.observations import ChildRole, LatencySamples, MetricError

LOAD_SOURCE = "shadow-load pods"
SPLITTER_SOURCE = "shadow splitter"

Window = LatencySamples | MetricError | None


async def load_pods_side(
    http: httpx.AsyncClient,
    plan: TrafficPlan,
    side: ChildRole,
    pods: Sequence[LoadPod],
    since: float,
    now: float,
    echoed: dict[str, tuple[str, ...]],
    token: str | None,
) -> Window:
    """A side's window from its load pods, one per shard (None: nothing measured yet)."""
    by_shard = {pod.shard: pod for pod in pods if pod.side == side.value}
    read: dict[int, LoadReport | str] = {}
    for shard in range(plan.shape.pods_per_side):
        pod = by_shard.get(shard)
        url = pod.report_url if pod is not None else None
        if pod is None or url is None:
            continue  # no running load pod: the rule names the shard
        try:
            report = await fetch_report(http, url, since, token)
        except ReportUnavailable as why:
            read[shard] = f"load pod {pod.name} did not answer ({why})"
            continue
        except ReportError as error:
            return MetricError(LOAD_SOURCE, f"load pod {pod.name}: {error}")
        read[shard] = report
        if report.endpoints is not None:
            echoed[pod.name] = report.endpoints
    return shards_window(side.value, plan.shape.pods_per_side, read, since, now)


async def splitter_side(
    http: httpx.AsyncClient,
    side: ChildRole,
    pods: Sequence[LoadPod],
    since: float,
    now: float,
    token: str | None,
    echoed: dict[str, tuple[str, ...]],
) -> Window:
    """A side's window from the splitter (None: not running yet)."""
    pod = next((pod for pod in pods if pod.report_url is not None), None)
    if pod is None or pod.report_url is None:
        return splitter_window(side.value, None, since, now)
    try:
        report = await fetch_report(http, pod.report_url, since, token, side.value)
    except ReportUnavailable as why:
        return splitter_window(
            side.value, f"splitter {pod.name} did not answer ({why})", since, now
        )
    except ReportError as error:
        return MetricError(SPLITTER_SOURCE, f"splitter {pod.name}: {error}")
    if report.endpoints is not None:
        echoed[f"{pod.name}/{side.value}"] = report.endpoints
    return splitter_window(side.value, report, since, now)
