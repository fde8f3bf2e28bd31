"""Prompts traffic, observed: the rollout's load pods, their prompt set, a look's windows.

Why: load pods, not the operator, send the traffic (`reconciler.load_sync`); observe reads
here once per reconcile (`observe_load`): the pods from the watched cache, the prompt set's
hash during an analysis, and each side's window when a look is due (`domain.load_window`).
Only the pods' endpoint echo is kept, so a restarted operator finds the same pods measuring.
More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from specdecode.adapters.kube.load_pods import LoadPod, observed_load_pods
from specdecode.adapters.kube.prompt_source import prompt_set_problem, read_prompt_text
from specdecode.adapters.kube.rollouts import RolloutRef
from specdecode.adapters.load.pods import LOAD_ROLE, uses_load_pods
from specdecode.adapters.load.windows import LOAD_SOURCE, Window
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.transitions import ANALYSIS_PHASES
from specdecode.reconciler.load_sync import sync_load_pods
from specdecode.reconciler.report_windows import read_windows
from specdecode.reconciler.runtime import Runtime

__all__ = [
    "LOAD_SOURCE",
    "LoadSeen",
    "observe_load",
    "observe_load_pods",
    "read_windows",
    "sync_load_pods",
    "uses_load_pods",
]


@dataclass(frozen=True)
class LoadSeen:
    """What one reconcile saw of its load pods: the pods, why the stage's load cannot
    start (its prompt set), the prompt set's hash, and a due look's windows."""

    pods: list[LoadPod]
    problem: str | None = None
    prompts_digest: str | None = None
    windows: tuple[Window, Window] = (None, None)


async def observe_load(
    runtime: Runtime,
    ref: RolloutRef,
    spec: SpecDecodeRolloutSpec,
    status: RolloutState,
    wanted: TrafficPlan | None,
    look: tuple[TrafficPlan, float, float] | None,
) -> LoadSeen:
    """The load pods' part of a reconcile's snapshot; `wanted`: the shadow load the status
    wants (`effects.traffic_plan`); `look`: (plan, since, now) when a look reads the load
    pods' reports."""
    pods = observe_load_pods(runtime, ref.namespace, ref.name)
    windows: tuple[Window, Window] = (None, None)
    if look is not None and uses_load_pods(spec):
        plan, since, now = look
        windows = await read_windows(runtime, ref.key, plan, pods, since, now, ref.uid)
    problem = None
    if wanted is not None and uses_load_pods(spec) and not pods:
        traffic = spec.analysis.traffic  # checked until pods exist
        problem = await asyncio.to_thread(prompt_set_problem, runtime.kube, ref.namespace, traffic)
    digest = await observe_prompts_digest(runtime, ref.namespace, spec, status)
    return LoadSeen(pods, problem, digest, windows)


def observe_load_pods(runtime: Runtime, namespace: str, rollout: str) -> list[LoadPod]:
    """The rollout's load pods, from the watched cache (a pod's change wakes the rollout)."""
    return observed_load_pods(runtime.cluster.rollout_pods(namespace, rollout, LOAD_ROLE))


async def observe_prompts_digest(
    runtime: Runtime, namespace: str, spec: SpecDecodeRolloutSpec, status: RolloutState
) -> str | None:
    """A hash of the referenced prompt set's content while an analysis runs (part of its
    evidence: an edit mid-stage restarts it); None for built-in prompts, outside an
    analysis (an idle rollout sends nothing) or when it cannot be read now (the load pods
    keep what they mounted; the prompt problem is reported before any pod is created)."""
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
