"""The asyncio side of the engine: a scaled clock, the step loop, per-request queues.

Simulated time runs `1 / time_scale` times faster than the wall clock; step durations
are slept for `duration x time_scale` wall seconds, and metrics record simulated
seconds so histograms do not depend on the scale.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping

from specdecode_sim.engine import EngineCore
from specdecode_sim.lookup import NgramIndex
from specdecode_sim.metrics import EngineMetrics
from specdecode_sim.protocol import ParsedRequest
from specdecode_sim.request import Emission, SimRequest
from specdecode_sim.textgen import (
    REPETITION,
    RepetitionProfile,
    TokenStream,
    natural_output_length,
    tokenize,
)


class SimClock:
    """Simulated seconds since start, derived from a monotonic wall clock."""

    def __init__(self, time_scale: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.time_scale = time_scale
        self._monotonic = monotonic
        self._origin = monotonic()

    def now(self) -> float:
        """Simulated seconds elapsed."""
        return (self._monotonic() - self._origin) / self.time_scale

    async def sleep_until(self, simulated: float) -> None:
        """Wait (in wall time) until the simulated clock reaches `simulated`."""
        remaining = (simulated - self.now()) * self.time_scale
        await asyncio.sleep(max(0.0, remaining))


class EngineLoop:
    """Runs EngineCore steps back to back while there is work; fans tokens out."""

    def __init__(
        self,
        core: EngineCore,
        clock: SimClock,
        metrics: EngineMetrics | None,
        server_seed: int,
        default_workload: str,
        repetition: Mapping[str, RepetitionProfile] = REPETITION,
    ) -> None:
        self.core = core
        self.clock = clock
        self.metrics = metrics
        self._server_seed = server_seed
        self._default_workload = default_workload
        self._repetition = repetition
        self._queues: dict[str, asyncio.Queue[Emission]] = {}
        self._wakeup = asyncio.Event()
        self._counter = 0

    def build_request(
        self, request_id: str, parsed: ParsedRequest, workload: str, max_tokens: int
    ) -> SimRequest:
        """A SimRequest whose text and acceptance draws are deterministic given the seed."""
        self._counter += 1
        if parsed.seed is not None:
            base = f"req-seed:{parsed.seed}"
        elif parsed.temperature == 0:
            base = f"greedy:{self._server_seed}"
        else:
            base = f"server:{self._server_seed}:{self._counter}"
        prompt = (
            [f"t{token}" for token in parsed.prompt_token_ids]
            if parsed.prompt_token_ids is not None
            else tokenize(parsed.prompt_text)
        )
        text_rng = random.Random(f"{base}|text|{parsed.prompt_text}")
        repetition = self._repetition[workload]
        spec = self.core.config.spec
        index: NgramIndex | None = None
        if spec is not None and spec.method in ("ngram", "suffix"):
            low, high = (
                (spec.prompt_lookup_min, spec.prompt_lookup_max)
                if spec.method == "ngram"
                else (1, spec.suffix_max_depth)
            )
            index = NgramIndex(low, high)
            index.extend(prompt)
        return SimRequest(
            request_id=request_id,
            prompt=prompt,
            max_tokens=max_tokens,
            workload=workload,
            arrival_ts=self.clock.now(),
            stream=TokenStream(prompt, text_rng, repetition),
            natural_length=natural_output_length(random.Random(f"{base}|len"), repetition),
            rng=random.Random(f"{base}|accept|{parsed.prompt_text}"),
            ignore_eos=parsed.ignore_eos,
            stop=parsed.stop,
            lookup_index=index,
        )

    def submit(self, request: SimRequest) -> asyncio.Queue[Emission]:
        """Queue a request; its emissions arrive on the returned queue."""
        queue: asyncio.Queue[Emission] = asyncio.Queue()
        self._queues[request.request_id] = queue
        self.core.add(request)
        self._wakeup.set()
        return queue

    def abort(self, request_id: str) -> None:
        """Client went away: drop the request and count it as aborted."""
        self._queues.pop(request_id, None)
        aborted = self.core.abort(request_id)
        if aborted is not None and self.metrics is not None:
            self.metrics.record_finished(aborted, self.clock.now())

    async def run(self) -> None:
        """Step forever; idle (no CPU) while nothing is queued or running."""
        while True:
            if not self.core.has_work():
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            report = self.core.step(self.clock.now())
            if report is None or not (report.emissions or report.duration > 0):
                await asyncio.sleep(0.001)
                continue
            await self.clock.sleep_until(report.ended)
            if self.metrics is not None:
                self.metrics.record_step(report)
            for emission in report.emissions:
                request_id = emission.request.request_id
                queue = self._queues.get(request_id)
                if queue is not None:
                    queue.put_nowait(emission)
                if emission.finish_reason is not None:
                    self._queues.pop(request_id, None)
