"""An honest clock: engine steps on an absolute simulated timeline (deadlines).

The old loop started each step at "now", read after the previous step's bookkeeping, so
the simulator's own CPU time (scheduling, SSE encoding, the HTTP server) was added to
every simulated step: +9 % ITL at time scale 1.0 and +65 % at 0.1. Now a busy engine
starts step n+1 exactly when step n ended in simulated time and sleeps until that
deadline; CPU spent in between is absorbed as long as it stays below the step time.

Short stalls (the OS deschedules the process, a GC pause) are caught up by running the
next steps back to back, so averages stay exact. When the process cannot keep up (the
wall clock is past the deadline by more than `lag_budget_wall_s`, default 0.5 s,
SPECDECODE_SIM_CLOCK_LAG_BUDGET_SECONDS), the timeline is moved to "now" and the slip is
*reported*: a
counter of overruns and of simulated seconds lost (exported on /metrics as
`specdecode_sim_clock_overruns_total` / `specdecode_sim_clock_overrun_seconds_total`)
and a log line, at most one per `log_interval_s`, instead of silently slowing down.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_LAG_BUDGET_WALL_S = 0.5


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


@dataclass
class ClockHealth:
    """What the timeline had to give up: exported as Prometheus counters."""

    overruns: int = 0
    overrun_seconds: float = 0.0
    steps: int = 0

    def exposition(self) -> bytes:
        """Prometheus text lines (outside vLLM's `vllm:` namespace)."""
        return (
            "# HELP specdecode_sim_clock_overruns_total Times the simulator fell behind its "
            "step deadlines by more than the lag budget (simulated time was resynchronised).\n"
            "# TYPE specdecode_sim_clock_overruns_total counter\n"
            f"specdecode_sim_clock_overruns_total {self.overruns}\n"
            "# HELP specdecode_sim_clock_overrun_seconds_total Simulated seconds added to the "
            "timeline because the simulator's CPU could not keep up.\n"
            "# TYPE specdecode_sim_clock_overrun_seconds_total counter\n"
            f"specdecode_sim_clock_overrun_seconds_total {self.overrun_seconds:.6f}\n"
            "# HELP specdecode_sim_engine_steps_total Engine steps simulated.\n"
            "# TYPE specdecode_sim_engine_steps_total counter\n"
            f"specdecode_sim_engine_steps_total {self.steps}\n"
        ).encode()


class Timeline:
    """Where the next engine step starts, in simulated seconds."""

    def __init__(
        self,
        clock: SimClock,
        lag_budget_wall_s: float = DEFAULT_LAG_BUDGET_WALL_S,
        log: Callable[[str], None] | None = None,
        log_interval_s: float = 10.0,
    ) -> None:
        self.clock = clock
        self.health = ClockHealth()
        self._lag_budget = lag_budget_wall_s / clock.time_scale
        self._end: float | None = None
        self._log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self._log_interval = log_interval_s / clock.time_scale
        self._last_log: float | None = None

    def next_start(self) -> float:
        """The previous step's end while busy (deadline), else now; resync on overrun."""
        now = self.clock.now()
        if self._end is None:
            return now
        lag = now - self._end
        if lag <= self._lag_budget:
            return self._end
        self.health.overruns += 1
        self.health.overrun_seconds += lag
        if self._last_log is None or now - self._last_log >= self._log_interval:
            self._last_log = now
            self._log(
                f"WARNING specdecode-sim clock overrun: the simulator's CPU fell {lag:.4f} "
                f"simulated s behind its step deadlines (time scale {self.clock.time_scale}); "
                f"simulated latency now includes it ({self.health.overruns} overruns, "
                f"{self.health.overrun_seconds:.3f} s in total). Use fewer streams or a "
                "larger SPECDECODE_SIM_TIME_SCALE."
            )
        return now

    def finished(self, end: float) -> None:
        """A step ends at `end` (simulated): the next one starts there while busy."""
        self.health.steps += 1
        self._end = end

    def idle(self) -> None:
        """No work: the next step starts whenever work arrives."""
        self._end = None
