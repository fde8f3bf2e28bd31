"""The asyncio side of the engine: the step loop on a deadline timeline, per-request queues.

Simulated time runs `1 / time_scale` times faster than the wall clock. Steps are placed
on an absolute simulated timeline (clock.Timeline): a busy engine starts each step when
the previous one ended and sleeps until that deadline, so the simulator's own CPU time
does not leak into simulated latency; overruns are counted and logged. Metrics record
simulated seconds so histograms do not depend on the scale.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping

from specdecode_sim.acceptance import temperature_factor
from specdecode_sim.clock import SimClock, Timeline
from specdecode_sim.engine import EngineCore
from specdecode_sim.lookup import NgramIndex
from specdecode_sim.metrics import EngineMetrics
from specdecode_sim.protocol import ParsedRequest
from specdecode_sim.request import Emission, SimRequest
from specdecode_sim.suffixindex import SuffixIndex
from specdecode_sim.textgen import (
    REPETITION,
    RepetitionProfile,
    TokenStream,
    natural_output_length,
    tokenize,
)

__all__ = ["EngineLoop", "SimClock", "Timeline"]


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
        lag_budget_wall_s: float = 0.5,
    ) -> None:
        self.core = core
        self.clock = clock
        self.timeline = Timeline(clock, lag_budget_wall_s)
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
        history: SuffixIndex | None = None
        if spec is not None and spec.method == "ngram":
            index = NgramIndex(spec.prompt_lookup_min, spec.prompt_lookup_max)
            index.extend(prompt)
        elif spec is not None and spec.method == "suffix":
            history = SuffixIndex(spec.suffix_max_depth)
            history.append(history.new_document(), prompt)
        forced = self.core.config.acceptance.constant is not None
        copy_factor = 1.0 if forced else temperature_factor(parsed.temperature, parsed.top_p)
        return SimRequest(
            request_id=request_id,
            prompt=prompt,
            max_tokens=max_tokens,
            workload=workload,
            arrival_ts=self.clock.now(),
            stream=TokenStream(prompt, text_rng, repetition, workload, copy_factor),
            natural_length=natural_output_length(random.Random(f"{base}|len"), repetition),
            rng=random.Random(f"{base}|accept|{parsed.prompt_text}"),
            ignore_eos=parsed.ignore_eos,
            stop=parsed.stop,
            lookup_index=index,
            suffix_history=history,
            temperature=parsed.temperature,
            top_p=parsed.top_p,
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
                self.timeline.idle()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            report = self.core.step(self.timeline.next_start())
            if report is None or not (report.emissions or report.duration > 0):
                self.timeline.idle()
                await asyncio.sleep(0.001)
                continue
            self.timeline.finished(report.ended)
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
