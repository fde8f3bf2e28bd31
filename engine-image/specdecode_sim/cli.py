"""`specdecode-sim serve MODEL [vllm serve flags]` (also installed as `vllm` in the image).

Order as in vLLM: parse flags (exit 2 on unknown flags / malformed JSON), validate the
engine configuration (exit 1 with the exception line on stderr), simulate model loading
(SPECDECODE_SIM_STARTUP_SECONDS, nothing listens yet), then bind and serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sys
from collections.abc import Sequence

import uvicorn

from specdecode_sim.cliargs import parse_cli
from specdecode_sim.clock import SimClock
from specdecode_sim.engine import EngineCore
from specdecode_sim.loop import EngineLoop
from specdecode_sim.metrics import EngineMetrics
from specdecode_sim.releases import ReleaseError, release_from_env
from specdecode_sim.server import ServerRuntime, create_app
from specdecode_sim.settings import SettingsError, SimSettings, load_settings
from specdecode_sim.startup import EnginePlan, StartupError, build_plan


def _die(code: int) -> None:
    print("ERROR EngineCore encountered a fatal error (simulated crash).", file=sys.stderr)
    sys.stderr.flush()
    os._exit(code)


async def _crash_later(seconds: float) -> None:
    await asyncio.sleep(seconds)
    _die(1)


async def serve(plan: EnginePlan, settings: SimSettings) -> None:
    """Load (simulated), then run the engine loop and the HTTP server until stopped."""
    scale = settings.time_scale
    if settings.startup_seconds:
        await asyncio.sleep(settings.startup_seconds * scale)
    spec = plan.engine.spec
    metrics = (
        EngineMetrics(
            plan.served_names[0],
            plan.engine.max_model_len,
            spec.num_speculative_tokens if spec else None,
            settings.release,
        )
        if plan.log_stats
        else None
    )
    clock = SimClock(scale)
    loop = EngineLoop(
        EngineCore(plan.engine),
        clock,
        metrics,
        plan.engine.seed,
        settings.workload,
        plan.repetition,
        settings.clock_lag_budget_seconds,
    )
    runtime = ServerRuntime(
        engine=loop,
        served_names=plan.served_names,
        model_path=plan.model_path,
        max_model_len=plan.engine.max_model_len,
        default_workload=settings.workload,
        warmup_seconds=settings.warmup_seconds,
        faults=settings.faults,
        api_keys=plan.api_keys,
        vllm_version=settings.release.version,
        exit_process=_die,
        fault_rng=random.Random(f"faults:{plan.engine.seed}"),
    )
    tasks = [asyncio.create_task(loop.run())]
    if settings.faults.crash_after_seconds is not None:
        tasks.append(asyncio.create_task(_crash_later(settings.faults.crash_after_seconds * scale)))
    config = uvicorn.Config(
        create_app(runtime),
        host=plan.host,
        port=plan.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    try:
        await uvicorn.Server(config).serve()
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the process exit status."""
    args = parse_cli(list(sys.argv[1:] if argv is None else argv))
    if args.version:
        try:
            print(release_from_env(os.environ).version)
        except ReleaseError as error:
            print(f"specdecode-sim: {error}", file=sys.stderr)
            return 1
        return 0
    if args.subcommand != "serve":
        print("usage: vllm serve [model_tag] [options]", file=sys.stderr)
        return 2
    try:
        settings = load_settings(os.environ)
        plan = build_plan(args, settings)
    except SettingsError as error:
        print(f"specdecode-sim: {error}", file=sys.stderr)
        return 1
    except StartupError as error:
        print(error.rendered, file=sys.stderr)
        return 1
    print(
        f"INFO specdecode-sim imitating vLLM {settings.release.version}"
        f"{' (speculative config validated, then ignored)' if settings.ignore_speculative else ''}"
        f": model={plan.model_path} "
        f"gpu={plan.engine.hardware.name} tp={plan.engine.tensor_parallel_size} "
        f"spec={plan.engine.spec} kv_tokens={plan.engine.kv_capacity_tokens} "
        f"time_scale={settings.time_scale} on {plan.host}:{plan.port}",
        file=sys.stderr,
    )
    asyncio.run(serve(plan, settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
