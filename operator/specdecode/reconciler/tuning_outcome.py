"""What a tuning says and starts: its status and phase Events, the production weights of
its report, and the rollout `apply: true` starts. Split from `tuning` (the run itself)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pydantic import ValidationError

from specdecode.adapters.kube.events import EventTarget, post_event
from specdecode.adapters.kube.tunings import patch_tuning_status
from specdecode.adapters.metrics import EngineSelector
from specdecode.api.tuning import KIND as TUNING_KIND
from specdecode.api.tuning import SpecDecodeTuningSpec
from specdecode.api.tuning_status import SpecDecodeTuningStatus, TuningPhase
from specdecode.domain.observations import MetricError
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.trials import TuningIdentity as TuningRef


def parse_status(raw: Mapping[str, Any] | None) -> SpecDecodeTuningStatus:
    """The stored status, or a fresh one if absent or unreadable."""
    try:
        return SpecDecodeTuningStatus.model_validate(dict(raw or {}))
    except ValidationError:
        return SpecDecodeTuningStatus()


async def running_histogram(
    runtime: Runtime, ref: TuningRef, spec: SpecDecodeTuningSpec
) -> dict[int, float] | None:
    """Production's running-request distribution over its window (`spec.production`), which
    weights the ladder's bands for the one config to roll out; None when unknown (the
    report then says which weights it used instead)."""
    if spec.production is None:
        return None
    end = runtime.clock.now()
    start = end - timedelta(seconds=spec.production.window_seconds)
    engine = EngineSelector(ref.namespace, spec.production.deployment)
    histogram = await runtime.running.running_histogram(engine, start, end)
    return None if isinstance(histogram, MetricError) else histogram


async def write_status(
    runtime: Runtime,
    ref: TuningRef,
    old: SpecDecodeTuningStatus,
    new: SpecDecodeTuningStatus,
) -> None:
    """Write the status if it changed; a phase change is also an Event, posted before the
    write and named after the generation and phase, so a repeat (a kill before the write,
    a stale copy, a restart) is refused, not doubled: exactly one per phase."""
    if new == old:
        return
    if new.phase != old.phase or old.observed_generation != new.observed_generation:
        await announce(runtime, ref, new)  # first: a kill before the write repeats it, once
    await asyncio.to_thread(patch_tuning_status, runtime.kube, ref.namespace, ref.name, new)


async def announce(runtime: Runtime, ref: TuningRef, new: SpecDecodeTuningStatus) -> None:
    """The phase's Event (TuningRunning, TuningSucceeded, TuningFailed with the reason)."""
    target = EventTarget(
        ref.namespace, ref.name, ref.uid, "", f"{ref.generation}/{new.phase}", TUNING_KIND
    )
    warning = new.phase is TuningPhase.FAILED
    await asyncio.to_thread(
        post_event,
        runtime.kube,
        target,
        0,
        "Warning" if warning else "Normal",
        f"Tuning{new.phase.value}",
        new.message,
        runtime.settings.identity,
    )


def winner_rollout(spec: SpecDecodeTuningSpec, patch: Mapping[str, Any]) -> dict[str, Any]:
    """The rollout `apply: true` starts: the tuning's model, engine and traffic, the winner."""
    wire = spec.rollout_wire(None)
    wire["speculative"] = dict(patch.get("spec") or {}).get("speculative")
    wire["analysis"] = {"traffic": spec.traffic.to_wire()}
    return wire
