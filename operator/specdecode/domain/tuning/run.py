"""A tuning in progress: the cells, the budget spent, and the next round (pure state).

The cluster runner (`reconciler/tuning.py`) keeps this in the report ConfigMap between
reconciles (`progress`) and feeds it each look's measurements from the load pods; the
benchmark and the tests feed it simulated ones. Nothing here knows where measurements
come from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdecode.domain.tuning.cells import CellKey, CellMeasurement, CellState, look_critical
from specdecode.domain.tuning.elimination import Standing, judge
from specdecode.domain.tuning.model import TuningPlan
from specdecode.domain.tuning.plan import Round, look_cost, next_round


@dataclass
class TuningRun:
    """Cells measured so far for one plan, by config fingerprint (search-space order)."""

    plan: TuningPlan
    configs: tuple[str, ...]
    cells: dict[CellKey, CellState] = field(default_factory=dict)
    gpu_seconds: float = 0.0
    looks: int = 0

    @classmethod
    def start(cls, plan: TuningPlan) -> TuningRun:
        """A run over the plan's search space and ladder."""
        return cls(plan, tuple(c.fingerprint for c in plan.candidates))

    @property
    def loads(self) -> tuple[int, ...]:
        """The ladder, production concurrency merged in."""
        return self.plan.loads

    def standing(self) -> Standing:
        """Elimination over the looks so far."""
        pace = self.plan.pace
        return judge(
            self.configs,
            self.loads,
            self.cells,
            self.plan.limits,
            pace.tie_within,
            pace.max_seconds,
        )

    def next_round(self) -> Round:
        """The cells to measure next (empty and done when decided or out of budget)."""
        plan, pace = self.plan, self.plan.pace
        return next_round(
            self.configs,
            self.loads,
            self.cells,
            self.standing(),
            max_parallel=plan.pairs_at_once,
            budget_left=plan.gpu_seconds_budget - self.gpu_seconds,
            gpus_per_replica=plan.gpus_per_replica,
            warmup=pace.warmup_seconds,
            look=pace.look_seconds,
            max_seconds=pace.max_seconds,
        )

    def begin_look(self, planned: Round) -> dict[CellKey, float]:
        """Charge a round and return each cell's critical value for its coming look."""
        trial = self.plan.pace
        critical = {}
        for key, state in self.cells.items():
            if key not in planned.cells:
                state.active = False
        for key in planned.cells:
            state = self.cells.setdefault(key, CellState(key))
            price = look_cost(
                state, self.plan.gpus_per_replica, trial.warmup_seconds, trial.look_seconds
            )
            state.gpu_seconds += price
            self.gpu_seconds += price
            state.seconds += trial.look_seconds
            state.look_times = (*state.look_times, state.seconds)
            state.active = True
            critical[key] = look_critical(
                trial.error, self.cell_count, state.look_times, trial.max_seconds, len(self.loads)
            )
            state.criticals[len(state.look_times)] = critical[key]
        self.looks += len(planned.cells)
        return critical

    def record(self, key: CellKey, measurement: CellMeasurement) -> None:
        """A look's measurement, at the critical value `begin_look` gave."""
        state = self.cells[key]
        state.measurement = measurement
        state.history[len(state.look_times)] = measurement

    @property
    def cell_count(self) -> int:
        """Cells the error is split over."""
        return len(self.configs) * len(self.loads)

    def exhaustive_gpu_seconds(self) -> float:
        """What running every cell for trial.maxSeconds would cost (the comparison)."""
        trial = self.plan.pace
        per_cell = 2 * self.plan.gpus_per_replica
        return self.cell_count * per_cell * (trial.warmup_seconds + trial.max_seconds)
