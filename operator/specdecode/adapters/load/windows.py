"""One side's measuring window, read from the pods that measured it (a look's read).

A look reads each side concurrently; each side asks its load pods (every shard) or the
splitter for their blocks since the window began and combines them (`domain.load_window`).
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
from specdecode.domain.load_window import side_window
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
    reports: list[LoadReport] = []
    missing: list[str] = []
    for shard in range(plan.shape.pods_per_side):
        pod = by_shard.get(shard)
        url = pod.report_url if pod is not None else None
        if pod is None or url is None:
            missing.append(f"shard {shard} has no running load pod")
            continue
        try:
            report = await fetch_report(http, url, since, token)
        except ReportUnavailable as why:
            missing.append(f"load pod {pod.name} did not answer ({why})")
            continue
        except ReportError as error:
            return MetricError(LOAD_SOURCE, f"load pod {pod.name}: {error}")
        reports.append(report)
        if report.endpoints is not None:
            echoed[pod.name] = report.endpoints
    if not reports:
        return None  # nothing measured yet (pods starting), not an incomplete window
    return side_window(side.value, reports, missing, since, now)


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
        return None  # not running yet: nothing measured, not an incomplete window
    try:
        report = await fetch_report(http, pod.report_url, since, token, side.value)
        if report.endpoints is not None:
            echoed[f"{pod.name}/{side.value}"] = report.endpoints
    except ReportUnavailable as why:
        return side_window(side.value, [], [f"splitter {pod.name} did not answer ({why})"],
                           since, now)  # fmt: skip
    except ReportError as error:
        return MetricError(SPLITTER_SOURCE, f"splitter {pod.name}: {error}")
    return side_window(side.value, [report], [], since, now)
