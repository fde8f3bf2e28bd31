"""One tuning trial on the cluster: its engines, its load pods, its looks, its removal.

A trial reuses the rollout's machinery whole: engines rendered by the rollout templates
(`render_trials`), load pods planned, created and read by `reconciler.load` (the same
pods, reports and windows a rollout stage has), counters read from Prometheus. Its
engines, Services and load pods are labelled `specdecode.io/rollout: <trial>` (the watched
cache and the wake-ups follow that label); they and its blocks ConfigMap are owned by the
tuning, which is how the tuning finds them to clean up.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from specdecode.adapters.kube.children import (
    delete_children,
    observe_children,
    stale_objects,
)
from specdecode.adapters.kube.load_pods import delete_pod
from specdecode.adapters.kube.owned import apply_children
from specdecode.adapters.kube.tunings import (
    apply_config_map,
    blocks_name,
    delete_config_map,
    pack_blocks,
    read_config_map,
    unpack_blocks,
)
from specdecode.adapters.metrics import EngineSelector
from specdecode.adapters.render import Owner
from specdecode.adapters.render_trials import render_trial_children, trial_name, trial_owner
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.tuning import KIND as TUNING_KIND
from specdecode.api.tuning import SpecDecodeTuningSpec
from specdecode.domain.child_names import child_name
from specdecode.domain.decision import TrafficPlan
from specdecode.domain.load_sizing import size_load
from specdecode.domain.observations import (
    SHADOW_ROLES,
    ChildRole,
    LatencyBlock,
    LatencySamples,
    MetricError,
)
from specdecode.domain.tuning.cells import CellKey
from specdecode.domain.tuning.measure import TrialWindow
from specdecode.domain.tuning.progress import RoundCell
from specdecode.reconciler.analysis_boundary import capacity_of
from specdecode.reconciler.load import observe_load_pods, read_windows, sync_load_pods
from specdecode.reconciler.runtime import Runtime

BLOCKS_KEY = "blocks.json.gz"


@dataclass(frozen=True)
class TuningIdentity:
    """The tuning being reconciled, at the generation its progress belongs to."""

    namespace: str
    name: str
    uid: str
    generation: int

    @property
    def key(self) -> str:
        """The key of its wake-ups and lock ("tuning:" keeps it apart from rollouts)."""
        return f"tuning:{self.namespace}/{self.name}"

    @property
    def owner(self) -> Owner:
        """The tuning as the owner of its report and trials' objects."""
        return Owner(self.name, self.namespace, self.uid, kind=TUNING_KIND)

    def trial(self, key: CellKey) -> str:
        """The trial name of one cell."""
        return trial_name(self.name, self.uid, self.generation, key.config, key.load)


@dataclass(frozen=True)
class Trial:
    """One cell's trial: its name, owner, config and the rollout spec it renders from."""

    key: CellKey
    name: str
    owner: Owner
    config: SpeculativeConfig
    spec: SpecDecodeRolloutSpec

    @classmethod
    def of(
        cls,
        tuning: TuningIdentity,
        spec: SpecDecodeTuningSpec,
        configs: Mapping[str, SpeculativeConfig],
        key: CellKey,
    ) -> Trial:
        """The trial of cell `key` of the tuning."""
        name = tuning.trial(key)
        config = configs[key.config]
        owner = trial_owner(tuning.name, tuning.namespace, tuning.uid, name)
        return cls(key, name, owner, config, spec.trial_spec(config))

    def plan(self, cell: RoundCell) -> TrafficPlan | None:
        """The load of the trial's current run (None before its engines were Ready)."""
        if cell.load_from is None:
            return None
        capacity = capacity_of(self.spec.analysis.traffic.load_generator)
        shape = size_load(capacity, self.key.load, None, self.spec.analysis.traffic.max_tokens)
        return TrafficPlan(
            stage_name=f"c{self.key.load}",
            candidate_fingerprint=self.config.fingerprint(),
            concurrency=self.key.load,
            request_rate=None,
            started_at=datetime.fromtimestamp(cell.load_from, UTC),
            shape=shape,
        )


@dataclass(frozen=True)
class EngineState:
    """Whether a trial's engines run, and what keeps them from it."""

    ready: bool
    crashed: str | None = None  # a crash loop: this config cannot run here
    waiting: str | None = None  # e.g. unschedulable: no GPU free yet (transient)


async def ensure_engines(runtime: Runtime, trial: Trial) -> EngineState:
    """Apply the trial's engines where the cache shows them absent or different, and say
    how they are: a crash loop ends the tuning as Failed; a pod the scheduler cannot place
    yet (GPUs held by other trials or other teams) is waited for, up to a deadline."""
    namespace = trial.owner.namespace
    deployments = runtime.cluster.rollout_deployments(namespace, trial.name)
    services = runtime.cluster.rollout_services(namespace, trial.name)
    rendered = render_trial_children(trial.owner, trial.spec)
    observed = [*deployments, *services]
    stale = stale_objects(rendered, observed)
    if stale:
        await apply_children(runtime.kube, stale, runtime.settings.field_manager, observed)
    states = observe_children(deployments, runtime.cluster.rollout_pods(namespace, trial.name))
    crashed = [
        f"{role.value} engine: {state.crash_reason}"
        for role in SHADOW_ROLES
        if (state := states.get(role)) is not None and state.crash_reason
    ]
    waiting = [
        f"{role.value} engine: {state.unschedulable_reason}"
        for role in SHADOW_ROLES
        if (state := states.get(role)) is not None and state.unschedulable_reason
    ]
    return EngineState(
        ready=all(role in states and states[role].ready for role in SHADOW_ROLES),
        crashed="; ".join(crashed) or None,
        waiting="; ".join(waiting) or None,
    )


async def run_load(runtime: Runtime, trial: Trial, cell: RoundCell) -> None:
    """The trial's load pods as its current run plans them (none before it started)."""
    pods = observe_load_pods(runtime, trial.owner.namespace, trial.name)
    await sync_load_pods(runtime, trial.owner, trial.spec, trial.plan(cell), pods)


async def look(
    runtime: Runtime, trial: Trial, cell: RoundCell, until: float, resumed: bool
) -> TrialWindow:
    """The cell's data up to its look's due time `until` (never more than the looks it
    was charged for: the sequential boundary counts measured time): this run's windows,
    plus, for a `resumed` cell, the stored blocks of its earlier runs. Acceptance counters
    cover this run only (Prometheus keeps no per-run split to merge)."""
    plan, since = trial.plan(cell), cell.measure_from
    if plan is None or since is None:
        return TrialWindow(None, None)
    namespace = trial.owner.namespace
    pods = observe_load_pods(runtime, namespace, trial.name)
    key = f"{namespace}/{trial.name}"
    baseline, candidate = await read_windows(
        runtime, key, plan, pods, since, until, trial.owner.uid
    )
    earlier = await _earlier_blocks(runtime, trial) if resumed else {}
    engine = EngineSelector(namespace, child_name(trial.name, ChildRole.CANDIDATE))
    start, end = datetime.fromtimestamp(since, UTC), datetime.fromtimestamp(until, UTC)
    acceptance = await runtime.acceptance.acceptance(engine, start, end)
    return TrialWindow(
        with_earlier_blocks(baseline, earlier.get(ChildRole.BASELINE.value, []), since),
        with_earlier_blocks(candidate, earlier.get(ChildRole.CANDIDATE.value, []), since),
        acceptance,
    )


def with_earlier_blocks(
    window: LatencySamples | MetricError | None, stored: list[LatencyBlock], since: float
) -> LatencySamples | MetricError | None:
    """This run's window plus the stored blocks of earlier runs (those before `since`: the
    store also holds this run's blocks of earlier looks, which the window has afresh)."""
    earlier = [block for block in stored if block.start < since]
    if not isinstance(window, LatencySamples) or not earlier or window.incomplete:
        return window
    seconds = sum(block.seconds for block in earlier)
    return dataclasses.replace(
        window,
        blocks=(*earlier, *window.blocks),
        window_seconds=window.window_seconds + seconds,
    )


async def _earlier_blocks(runtime: Runtime, trial: Trial) -> dict[str, list[LatencyBlock]]:
    stored = await asyncio.to_thread(
        read_config_map, runtime.kube, trial.owner.namespace, blocks_name(trial.name)
    )
    raw = (stored or {}).get(BLOCKS_KEY)
    if not isinstance(raw, bytes):
        return {}
    try:
        return unpack_blocks(raw)
    except (OSError, ValueError, KeyError, TypeError):
        return {}  # unreadable (not ours, or truncated): the cell goes on with this run


async def keep_blocks(runtime: Runtime, trial: Trial, window: TrialWindow) -> None:
    """Store every block the cell has measured (earlier runs and this one, as `look`
    merged them), so they still count if the plan pauses the cell and resumes it on new
    engines."""
    sides: dict[str, list[LatencyBlock]] = {}
    for role, side in zip(SHADOW_ROLES, (window.baseline, window.candidate), strict=True):
        if not isinstance(side, LatencySamples) or side.incomplete:
            return
        sides[role.value] = list(side.blocks)
    await asyncio.to_thread(
        apply_config_map,
        runtime.kube,
        trial.owner,
        blocks_name(trial.name),
        {},
        runtime.settings.field_manager,
        {BLOCKS_KEY: pack_blocks(sides)},
    )


async def remove(runtime: Runtime, namespace: str, trial: str, keep_data: bool = True) -> None:
    """Delete a trial's engines and load pods (present in the cache); its blocks too unless
    `keep_data` (a paused cell resumes with them)."""
    deployments = runtime.cluster.rollout_deployments(namespace, trial)
    services = runtime.cluster.rollout_services(namespace, trial)
    doomed = [("Deployment", _name(d)) for d in deployments] + [
        ("Service", _name(s)) for s in services
    ]
    if doomed:
        await asyncio.to_thread(delete_children, runtime.kube, namespace, doomed)
    for pod in observe_load_pods(runtime, namespace, trial):
        if not pod.deleting:
            await asyncio.to_thread(delete_pod, runtime.kube, namespace, pod.name)
    key = f"{namespace}/{trial}"
    runtime.load_cache.forget_endpoints(key)
    if not keep_data:
        await asyncio.to_thread(delete_config_map, runtime.kube, namespace, blocks_name(trial))


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))
