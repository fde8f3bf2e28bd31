"""Prompts traffic: the stage run's load pods, kept as the decision says, and read per look.

The operator sends no inference traffic itself. For the stage run the domain plans
(`TrafficPlan`), each side gets its load pods (rendered in `adapters.load.pods`); any
other load pod of the rollout (an earlier stage, a re-run, an ended analysis) is deleted.
A look asks every pod of the run for its blocks since the window began and combines them
per side (`domain.load_window`). Nothing is kept between reconciles: a restarted operator
finds the same pods, and they kept measuring while it was away.

Load pods send to the engines' pod addresses, read from the watched pod cache
(`adapters.kube.endpoints`): a pod being created gets the current ones; a running pod is
pushed a side's list when it differs from the one its reports echo. An engine pod
becoming Ready, or going, is a watch event that wakes the rollout, so no periodic lookup
is needed; only a pod that does not echo (an older load image) is pushed again on a timer,
since nothing else would tell that its container restarted with its start-up list.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Sequence

from specdecode.adapters.kube.endpoints import ready_engine_endpoints
from specdecode.adapters.kube.load_pods import (
    LoadPod,
    create_pod,
    delete_pod,
    observed_load_pods,
)
from specdecode.adapters.kube.load_token import (
    LoadTokenError,
    ensure_load_token,
    read_load_token,
)
from specdecode.adapters.kube.prompt_source import read_prompt_text
from specdecode.adapters.load.pods import LOAD_ROLE, SIDES, plan_hash, render_load_pods
from specdecode.adapters.load.reports import ReportUnavailable, fetch_report, push_endpoints
from specdecode.adapters.render import Owner
from specdecode.api import SpecDecodeRolloutSpec, TrafficSourceType
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_report import LoadReport, ReportError
from specdecode.domain.load_window import side_window
from specdecode.domain.observations import ChildRole, LatencySamples, MetricError
from specdecode.domain.prompts import PromptSourceError, SamplingDefaults, parse_jsonl
from specdecode.domain.transitions import ANALYSIS_PHASES
from specdecode.reconciler.ownership import Found
from specdecode.reconciler.runtime import Runtime

LOAD_SOURCE = "shadow-load pods"
# How often a load pod whose reports do not echo its endpoints is pushed them again once
# they differ from its start-up arguments (we cannot see whether it still uses our push).
UNECHOED_PUSH_SECONDS = 15.0


def uses_load_pods(spec: SpecDecodeRolloutSpec | None) -> bool:
    """Only Prompts traffic is sent by load pods (Mirror traffic is the gateway's)."""
    return spec is not None and spec.analysis.traffic.source is TrafficSourceType.PROMPTS


def observe_load_pods(runtime: Runtime, namespace: str, rollout: str) -> list[LoadPod]:
    """The rollout's load pods, from the watched cache (a pod's change wakes the rollout)."""
    return observed_load_pods(runtime.cluster.rollout_pods(namespace, rollout, LOAD_ROLE))


async def prompt_problem(
    runtime: Runtime, namespace: str, spec: SpecDecodeRolloutSpec
) -> str | None:
    """Why the prompt set cannot be replayed (read and parsed as the load pods will), or None."""
    traffic = spec.analysis.traffic
    try:
        text = await asyncio.to_thread(read_prompt_text, runtime.kube, namespace, traffic)
        if text is not None:
            sampling = SamplingDefaults(temperature=traffic.temperature, top_p=traffic.top_p)
            parse_jsonl(text, traffic.max_tokens, sampling)
    except PromptSourceError as error:
        return f"prompt set unusable: {error}"
    return None


async def observe_prompts_digest(
    runtime: Runtime, namespace: str, spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus
) -> str | None:
    """A hash of the referenced prompt set's content while an analysis runs (part of its
    evidence: an edit mid-stage restarts it); None for built-in prompts, outside an
    analysis (an idle rollout sends nothing) or when it cannot be read now (the load pods
    keep what they mounted; `prompt_problem` reports it before any pod is created)."""
    if not uses_load_pods(spec) or status.phase not in ANALYSIS_PHASES:
        return None
    traffic = spec.analysis.traffic
    if traffic.config_map_ref is None and traffic.secret_ref is None:
        return None
    try:
        text = await asyncio.to_thread(read_prompt_text, runtime.kube, namespace, traffic)
    except Exception:
        # A missing key, a refused or timed-out GET, bytes that are not UTF-8: the digest
        # is unknown now, which compares nothing (`evidence.changed_parts`), rather than a
        # reconcile aborted on a read that only feeds the fingerprint.
        return None
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()[:10]


def current_pods(pods: Sequence[LoadPod], plan: TrafficPlan) -> list[LoadPod]:
    """The pods (load pods or the splitter) of `plan` that are not being deleted."""
    hashed = plan_hash(plan)
    return [pod for pod in pods if pod.plan == hashed and not pod.deleting]


async def read_windows(
    runtime: Runtime,
    rollout: str,
    plan: TrafficPlan,
    pods: Sequence[LoadPod],
    since: float,
    now: float,
    uid: str = "",
) -> tuple[LatencySamples | MetricError | None, LatencySamples | MetricError | None]:
    """(baseline, candidate) windows of the stage run from its load pods' reports.

    Each report's echo of the engine endpoints its pod uses is kept for `sync_load_pods`
    (`rollout` is the rollout's "namespace/name", `uid` its uid: the owner of its token).
    """
    current = current_pods(pods, plan)
    echoed = runtime.load_cache.endpoints.setdefault(rollout, {})
    token = await known_token(runtime, rollout, uid) if current else None
    windows = await asyncio.gather(
        *(_side(runtime, plan, side, current, since, now, echoed, token) for side in SIDES)
    )
    return windows[0], windows[1]


async def _side(
    runtime: Runtime,
    plan: TrafficPlan,
    side: ChildRole,
    pods: Sequence[LoadPod],
    since: float,
    now: float,
    echoed: dict[str, tuple[str, ...]],
    token: str | None,
) -> LatencySamples | MetricError | None:
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
            report = await fetch_report(runtime.http, url, since, token)
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


async def sync_load_pods(
    runtime: Runtime,
    owner: Owner,
    spec: SpecDecodeRolloutSpec | None,
    plan: TrafficPlan | None,
    pods: Sequence[LoadPod],
    found: Found | None = None,
) -> None:
    """Make the rollout's load pods exactly those of `plan` (none when it is None); a
    load-token Secret held by another object goes to `found` (`reconciler.ownership`).

    Pods are created only after the prompt set parsed (a bad one is reported by the next
    observation, `prompt_problem`, and ends the analysis as Failed), and are told of
    engine endpoints that changed since they started.
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
    endpoints = {side: ready_engine_endpoints(engines, side, port) for side in SIDES}
    if len(running) < 2 * wanted.shape.pods_per_side:
        desired = render_load_pods(owner, spec, wanted, endpoints, runtime.settings.load_image)
        absent = [wanted_pod for wanted_pod in desired if wanted_pod.name not in keep]
        if absent and await prompt_problem(runtime, owner.namespace, spec) is None:
            if key not in runtime.load_cache.tokens:  # before the first pod: they read it at start
                try:
                    made = await asyncio.to_thread(ensure_load_token, runtime.kube, owner)
                except LoadTokenError as error:  # another object holds the Secret's name
                    found.load_token(str(error))
                    return
                found.load_token(None)
                runtime.load_cache.tokens[key] = made
            for wanted_pod in absent:
                await asyncio.to_thread(create_pod, runtime.kube, wanted_pod.manifest)
    known = await known_token(runtime, key, owner.uid, found) if running else None
    await _push_changed_endpoints(runtime, key, running, endpoints, known)


async def known_token(
    runtime: Runtime, rollout: str, uid: str, found: Found | None = None
) -> str | None:
    """The rollout's load token: cached, else read once (after a restart); None while it
    has none (its pods, if any, predate tokens and require none). A Secret of that name
    that is not the rollout's goes to `found` when an apply asks (an observation does not
    write: the apply that follows finds it too)."""
    token = runtime.load_cache.tokens.get(rollout)
    if token is None and uid:
        namespace, name = rollout.split("/", 1)
        try:
            token = await asyncio.to_thread(read_load_token, runtime.kube, namespace, name, uid)
        except LoadTokenError as error:  # swapped for another object's since the pods began
            if found is not None:
                found.load_token(str(error))
            return None
        if token is not None:
            runtime.load_cache.tokens[rollout] = token
    return token


async def _push_changed_endpoints(
    runtime: Runtime,
    rollout: str,
    running: Sequence[LoadPod],
    endpoints: dict[ChildRole, list[str]],
    token: str | None,
) -> None:
    """Push each running pod its side's endpoints where they differ from those it uses.

    What a pod uses is its report's echo (kept by `read_windows`, updated here after a
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
