"""A tuning's progress on a cluster: the run's cells and the round in flight, as JSON.

Why JSON in a ConfigMap and not memory or status: a restarted operator must resume the
round with the looks already paid for, and status must stay small whatever the search
space. Pure: the reconciler reads and writes the text. Fields: docs/internals.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from specdecode.domain.stats import Interval
from specdecode.domain.tuning.cells import CellKey, CellMeasurement, CellState
from specdecode.domain.tuning.model import TuningPlan
from specdecode.domain.tuning.run import TuningRun

FORMAT = 2  # 2: per-look critical values and measurements (bounds intersected over looks)


@dataclass
class RoundCell:
    """One cell of the round in flight."""

    critical: float  # z of this look
    load_from: float | None = None  # load pods started (engines Ready)
    measure_from: float | None = None  # warm-up over
    run_seconds: float = 0.0  # measured seconds of earlier looks in this run
    recorded: bool = False
    note: str = ""  # why the look has not been recorded yet

    def look_due(self, look_seconds: float) -> float | None:
        """When this cell's look may be taken (None: its load has not started)."""
        if self.measure_from is None:
            return None
        return self.measure_from + self.run_seconds + look_seconds


@dataclass
class Progress:
    """The run and the round in flight."""

    run: TuningRun
    round: dict[CellKey, RoundCell] = field(default_factory=dict)
    rounds: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    round_started_at: float | None = None
    applied: str | None = None  # `apply: true` done: "created", "patched", "left alone" (once)
    generation: int = 0  # the spec generation this progress answers

    def round_done(self) -> bool:
        """Every cell of the round recorded its look (an empty round is done)."""
        return all(cell.recorded for cell in self.round.values())


def _interval(value: Interval | None) -> list[Any] | None:
    if value is None:
        return None
    return [value.value, value.lower, value.upper, value.samples]


def _from_interval(raw: Any) -> Interval | None:
    if raw is None:
        return None
    value, lower, upper, samples = raw
    return Interval(float(value), float(lower), float(upper), int(samples))


def _measurement(m: CellMeasurement | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {"objective_log_se": m.objective_log_se} | {
        name: _interval(getattr(m, name))
        for name in (
            "objective",
            "tpot_speedup",
            "throughput_ratio",
            "tail_ratio",
            "error_rate",
            "alpha",
            "accepted_length",
        )
    }


def _from_measurement(raw: dict[str, Any] | None) -> CellMeasurement | None:
    if raw is None:
        return None

    def required(name: str) -> Interval:
        value = _from_interval(raw[name])
        if value is None:
            raise ValueError(f"{name} missing")
        return value

    return CellMeasurement(
        objective=required("objective"),
        tpot_speedup=required("tpot_speedup"),
        throughput_ratio=required("throughput_ratio"),
        tail_ratio=required("tail_ratio"),
        error_rate=required("error_rate"),
        alpha=_from_interval(raw.get("alpha")),
        accepted_length=_from_interval(raw.get("accepted_length")),
        objective_log_se=raw.get("objective_log_se"),
    )


def _key(key: CellKey) -> str:
    return f"{key.config}@{key.load}"


def _from_key(text: str) -> CellKey:
    config, load = text.rsplit("@", 1)
    return CellKey(config, int(load))


def to_json(progress: Progress) -> str:
    """The progress as JSON (infinite bounds as the JSON extension `Infinity`)."""
    run = progress.run
    cells = {
        _key(key): {
            "seconds": state.seconds,
            "lookTimes": list(state.look_times),
            "gpuSeconds": state.gpu_seconds,
            "active": state.active,
            "notes": state.notes,
            "measurement": _measurement(state.measurement),
            "criticals": {str(look): z for look, z in state.criticals.items()},
            "history": {str(look): _measurement(m) for look, m in state.history.items()},
        }
        for key, state in run.cells.items()
    }
    round_cells = {
        _key(key): {
            "critical": cell.critical,
            "loadFrom": cell.load_from,
            "measureFrom": cell.measure_from,
            "runSeconds": cell.run_seconds,
            "recorded": cell.recorded,
            "note": cell.note,
        }
        for key, cell in progress.round.items()
    }
    document = {
        "format": FORMAT,
        "gpuSeconds": run.gpu_seconds,
        "looks": run.looks,
        "cells": cells,
        "round": round_cells,
        "rounds": progress.rounds,
        "startedAt": progress.started_at,
        "finishedAt": progress.finished_at,
        "roundStartedAt": progress.round_started_at,
        "applied": progress.applied,
        "generation": progress.generation,
    }
    return json.dumps(document, sort_keys=True, allow_nan=True)


def from_json(plan: TuningPlan, text: str | None) -> Progress | None:
    """The progress stored for `plan`, or None when there is none or it is unreadable
    (another format, or a search space that no longer matches: the run starts again)."""
    if not text:
        return None
    try:
        document = json.loads(text)
        if document.get("format") != FORMAT:
            return None
        run = TuningRun.start(plan)
        known = set(run.configs)
        for name, raw in document["cells"].items():
            key = _from_key(name)
            if key.config not in known or key.load not in run.loads:
                return None
            run.cells[key] = CellState(
                key,
                seconds=float(raw["seconds"]),
                look_times=tuple(float(t) for t in raw["lookTimes"]),
                measurement=_from_measurement(raw["measurement"]),
                gpu_seconds=float(raw["gpuSeconds"]),
                active=bool(raw["active"]),
                notes=list(raw["notes"]),
                criticals={int(look): float(z) for look, z in raw["criticals"].items()},
                history={
                    int(look): measured
                    for look, m in raw["history"].items()
                    if (measured := _from_measurement(m)) is not None
                },
            )
        run.gpu_seconds = float(document["gpuSeconds"])
        run.looks = int(document["looks"])
        round_cells = {
            _from_key(name): RoundCell(
                critical=float(raw["critical"]),
                load_from=raw["loadFrom"],
                measure_from=raw["measureFrom"],
                run_seconds=float(raw["runSeconds"]),
                recorded=bool(raw["recorded"]),
                note=str(raw["note"]),
            )
            for name, raw in document["round"].items()
        }
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return Progress(
        run,
        round_cells,
        int(document.get("rounds", 0)),
        document.get("startedAt"),
        document.get("finishedAt"),
        document.get("roundStartedAt"),
        document.get("applied"),
        int(document.get("generation", 0)),
    )
