"""One reconcile of one SpecDecodeTuning: resume the run, advance its round, report.

Parse the spec (invalid: Failed, trials removed), resume from the report ConfigMap's
`state.json` (a new generation starts afresh), advance the round (`domain.tuning.rounds`),
then write state, report and status where changed; when done, remove the trials and, with
`apply: true`, start the gated rollout of the winner. Why: every step is idempotent, so a
reconcile stopped anywhere is completed by the next. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kubernetes.client import ApiException
from pydantic import ValidationError

from specdecode.adapters.kube.tunings import (
    LEFT_ALONE,
    apply_config_map,
    blocks_name,
    delete_config_map,
    read_config_map,
    report_name,
    start_rollout,
)
from specdecode.adapters.render import DEPLOYMENT_PROGRESS_SLACK_SECONDS
from specdecode.api.tuning import SpecDecodeTuningSpec
from specdecode.api.tuning_status import SpecDecodeTuningStatus, TuningPhase
from specdecode.domain.tuning import rounds
from specdecode.domain.tuning.measure import measure_cell
from specdecode.domain.tuning.progress import Progress, from_json, to_json
from specdecode.domain.tuning.render import markdown, svg
from specdecode.domain.tuning.render import to_json as report_json
from specdecode.domain.tuning.report import build_report
from specdecode.domain.tuning.run import TuningRun
from specdecode.reconciler import trials
from specdecode.reconciler.reconcile import validation_message
from specdecode.reconciler.runtime import Runtime
from specdecode.reconciler.tuning_boundary import plan_of, status_of
from specdecode.reconciler.tuning_outcome import (
    parse_status,
    running_histogram,
    winner_rollout,
    write_status,
)

STATE_KEY = "state.json"
# How long past the engine's own start-up timeout a trial may wait for its engines (GPUs
# held by other trials or teams) before the tuning fails: the Deployment progress slack.
ENGINE_WAIT_SLACK_SECONDS = DEPLOYMENT_PROGRESS_SLACK_SECONDS
TERMINAL = frozenset({TuningPhase.SUCCEEDED, TuningPhase.FAILED})


TuningRef = trials.TuningIdentity


async def reconcile_tuning(
    runtime: Runtime, ref: TuningRef, raw_spec: Mapping[str, Any], raw_status: Mapping[str, Any]
) -> float | None:
    """Advance the tuning; seconds until time alone needs another pass (None: events only)."""
    status = parse_status(raw_status)
    try:
        spec = SpecDecodeTuningSpec.model_validate(dict(raw_spec))
    except ValidationError as error:
        await _remove_trials(runtime, ref, keep=set())
        failed = SpecDecodeTuningStatus(
            phase=TuningPhase.FAILED,
            message=validation_message(error),
            observed_generation=ref.generation,
        )
        await write_status(runtime, ref, status, failed)
        return None
    finished = status.phase in TERMINAL and status.observed_generation == ref.generation
    if finished or runtime.write_echo.finished_tunings.get(ref.key) == ref.generation:
        await _remove_trials(runtime, ref, keep=set())
        return None
    try:
        return await _run(runtime, ref, spec, status)
    except ApiException as error:
        if not _refused(error):
            raise
        # The API server refused what the spec makes us write (an object too large, a
        # rollout it rejects): retrying cannot help, so the tuning fails and says why.
        await _remove_trials(runtime, ref, keep=set())
        failed = SpecDecodeTuningStatus(
            phase=TuningPhase.FAILED,
            message=f"the API server refused a write: {error.status} {error.reason}: "
            f"{str(error.body)[:600]}",
            observed_generation=ref.generation,
        )
        await write_status(runtime, ref, status, failed)
        runtime.write_echo.finished_tunings[ref.key] = ref.generation
        return None


def _refused(error: ApiException) -> bool:
    """A permanent refusal (400, 403, 413, 422), not a conflict, an absence or a throttle."""
    return error.status in (400, 403, 413, 422)


async def _run(
    runtime: Runtime,
    ref: TuningRef,
    spec: SpecDecodeTuningSpec,
    status: SpecDecodeTuningStatus,
) -> float | None:
    """Resume, advance, report (the module docstring's steps 2-4)."""
    stored = await asyncio.to_thread(
        read_config_map, runtime.kube, ref.namespace, report_name(ref.name)
    )
    stored = stored or {}
    plan = plan_of(spec)  # the wire spec into the domain's terms, once a reconcile
    progress = from_json(plan, stored.get(STATE_KEY))
    if progress is None or progress.generation != ref.generation:  # a changed spec: afresh
        progress = Progress(TuningRun.start(plan), generation=ref.generation)
    now = runtime.clock.now().timestamp()
    failure = await _advance(runtime, ref, spec, progress, now)
    # Production's distribution weights the final report (one range query, not one a look).
    running = await running_histogram(runtime, ref, spec) if progress.finished_at else None
    report = build_report(progress.run, running)
    summary = status_of(report, report_name(ref.name))
    done = progress.finished_at is not None
    if failure is not None:
        phase, message = TuningPhase.FAILED, failure
    elif done:
        phase = TuningPhase.SUCCEEDED
        message = f"done: {report.winners[-1].reason}" if report.winners else "done"
        if spec.apply and progress.applied is None:  # once: the state records it
            progress.applied = await asyncio.to_thread(
                start_rollout,
                runtime.kube,
                ref.namespace,
                ref.name,
                winner_rollout(spec, report.rollout_patch),
                ref.owner.uid,
            )
        if progress.applied == LEFT_ALONE:
            message += (
                f"; SpecDecodeRollout {ref.name} exists and this tuning did not start it: "
                "left as it is (the winner's patch is in the report)"
            )
        elif progress.applied is not None:
            message += f"; SpecDecodeRollout {ref.name} {progress.applied} with the winner"
    else:
        waiting = [c.note for c in progress.round.values() if c.note]
        phase = TuningPhase.RUNNING
        message = f"round {progress.rounds}: " + (waiting[0] if waiting else "trials running")
    new = summary.model_copy(
        update={"phase": phase, "message": message[:1000], "observed_generation": ref.generation}
    )
    contents = {
        STATE_KEY: to_json(progress),
        "report.json": report_json(report),
        "report.md": markdown(report),
        "report.svg": svg(report),
    }
    if any(stored.get(k) != v for k, v in contents.items()):
        await asyncio.to_thread(
            apply_config_map,
            runtime.kube,
            ref.owner,
            report_name(ref.name),
            contents,
            runtime.settings.field_manager,
        )
    if failure is not None or done:
        await _remove_trials(runtime, ref, keep=set())
        for key in progress.run.cells:  # blocks of paused cells have no engines to find
            await asyncio.to_thread(
                delete_config_map, runtime.kube, ref.namespace, blocks_name(ref.trial(key))
            )
    else:  # trials of an older generation, or of cells the plan paused before a restart
        await _remove_trials(runtime, ref, {ref.trial(k) for k in progress.round}, progress)
    await write_status(runtime, ref, status, new)
    runtime.metrics.tuning_reported(ref.namespace, ref.name, report, new)
    if failure is not None or done:
        runtime.write_echo.finished_tunings[ref.key] = ref.generation
        return None
    return rounds.next_wake(progress, now)


async def _advance(
    runtime: Runtime, ref: TuningRef, spec: SpecDecodeTuningSpec, progress: Progress, now: float
) -> str | None:
    """Move the round on as far as now allows; the reason the tuning fails, if it does."""
    configs = {c.fingerprint(): c for c in spec.configs()}
    for _ in range(2):  # a round that just ended starts the next one in the same pass
        if not progress.round_done():
            break
        started = rounds.start_round(progress, now)
        for key in started.stopped:
            await trials.remove(runtime, ref.namespace, ref.trial(key))
        if started.done:
            return None
    for key, cell in progress.round.items():
        trial = trials.Trial.of(ref, spec, configs, key)
        runtime.wakeups.follow(f"{ref.namespace}/{trial.name}", ref.key)
        engines = await trials.ensure_engines(runtime, trial)
        where = f"{trial.config.to_cli_json()} at concurrency {key.load}"
        if engines.crashed is not None:
            return f"{where}: {engines.crashed}"
        if engines.ready:
            rounds.engines_ready(progress, key, now)
        elif cell.load_from is None:
            cell.note = f"waiting for the engines of {trial.name}" + (
                f" ({engines.waiting})" if engines.waiting else ""
            )
            waited = now - (progress.round_started_at or now)
            if waited > spec.engine.startup_timeout_seconds + ENGINE_WAIT_SLACK_SECONDS:
                return f"{where}: engines not Ready after {waited:.0f} s ({cell.note})"
        await trials.run_load(runtime, trial, cell)
    for key in rounds.due(progress, now):
        trial = trials.Trial.of(ref, spec, configs, key)
        cell = progress.round[key]
        until, resumed = rounds.window_end(progress, key, now), rounds.resumed(progress, key)
        window = await trials.look(runtime, trial, cell, until, resumed)
        plan = progress.run.plan
        measured = measure_cell(window, cell.critical, plan.candidate(key.config), plan.gates)
        rounds.record(progress, key, measured, now)
        if not isinstance(measured, str):
            await trials.keep_blocks(runtime, trial, window)
    return None


async def _remove_trials(
    runtime: Runtime, ref: TuningRef, keep: set[str], progress: Progress | None = None
) -> None:
    """Remove every trial of the tuning the cache shows, except `keep`; the blocks of a
    cell of `progress` stay (a paused cell resumes with them)."""
    measured = {ref.trial(k) for k in progress.run.cells} if progress is not None else set()
    for name in runtime.cluster.labelled_owned_by(ref.namespace, ref.uid) - keep:
        await trials.remove(runtime, ref.namespace, name, keep_data=name in measured)
