"""`report.json` read back: the exact inverse of `render.to_json`.

Readers of the report ConfigMap (the kubectl plugin, the operator's metrics) rebuild the
typed `TuningReport` instead of walking raw JSON, so every picture they show comes from
the same `render` functions as the ConfigMap's own `report.md` and `report.svg`.
`to_json` sorts keys, which loses the search-space order of the per-config mappings; the
rows keep it (config-major, as `build_report` writes them), so it is restored from them
and the round-tripped report renders byte for byte the same Markdown and SVG.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from specdecode.domain.tuning.recommend import BreakEven, FamilyScore
from specdecode.domain.tuning.report import Bounds, CellRow, TuningReport, Winner

V = TypeVar("V")
Flat = TypeVar("Flat", Bounds, CellRow, Winner)


class ReportFormatError(ValueError):
    """The text is not a tuning report this version can read (truncated, or another shape)."""


def report_from_json(text: str) -> TuningReport:
    """The report `to_json` wrote; ReportFormatError (one line, no traceback) otherwise."""
    try:
        data = json.loads(text)
        return _report(data)
    except ReportFormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ReportFormatError(f"not a tuning report: {type(error).__name__}: {error}") from error


def _report(data: Mapping[str, Any]) -> TuningReport:
    if not isinstance(data, Mapping):
        raise ReportFormatError("not a tuning report: not a JSON object")
    rows = tuple(_flat(CellRow, r) for r in data["rows"])
    order = list(dict.fromkeys(row.config for row in rows))
    schedule = data["schedule"]
    return TuningReport(
        objective=str(data["objective"]),
        loads=tuple(int(load) for load in data["loads"]),
        labels=_ordered({str(k): str(v) for k, v in data["labels"].items()}, order),
        configs=_ordered({str(k): dict(v) for k, v in data["configs"].items()}, order),
        rows=rows,
        break_even=_ordered({str(k): _break_even(v) for k, v in data["break_even"].items()}, order),
        winners=tuple(_flat(Winner, w) for w in data["winners"]),
        band_weights=tuple(float(w) for w in data["band_weights"]),
        families=tuple(_family(f) for f in data["families"]),
        schedule=None if schedule is None else [[int(x) for x in pair] for pair in schedule],
        rollout_patch=dict(data["rollout_patch"]),
        gpu_seconds=data["gpu_seconds"],
        exhaustive_gpu_seconds=data["exhaustive_gpu_seconds"],
        looks=int(data["looks"]),
        dropped=tuple(str(d) for d in data["dropped"]),
        done=bool(data["done"]),
        weights_source=str(data.get("weights_source", "")),
        recommendation=str(data.get("recommendation", "")),
        uniform_recommendation=str(data.get("uniform_recommendation", "")),
    )


def _ordered(mapping: dict[str, V], order: Iterable[str]) -> dict[str, V]:
    """Configs in row order first (search-space order), any others after, sorted."""
    first = [key for key in order if key in mapping]
    return {key: mapping[key] for key in [*first, *sorted(set(mapping) - set(first))]}


def _bounds(data: Mapping[str, Any] | None) -> Bounds | None:
    return None if data is None else _flat(Bounds, data)


# How `_flat` reads a field, by its declared type (as `to_json` wrote it).
_READERS: dict[str, Callable[[Any], Any]] = {
    "str": str,
    "int": int,
    "bool": bool,
    "float": lambda value: value,
    "Bounds | None": _bounds,
}


def _flat(cls: type[Flat], data: Mapping[str, Any]) -> Flat:
    """A dataclass of scalars and bounds (a row, a winner, a bound), each field read by its
    declared type: one reader for every flat record of the report."""
    return cls(**{f.name: _READERS[str(f.type)](data[f.name]) for f in dataclasses.fields(cls)})


def _break_even(data: Mapping[str, Any]) -> BreakEven:
    return BreakEven(data["above"], data["at_or_below"], data["estimate"])


def _family(data: Mapping[str, Any]) -> FamilyScore:
    best = tuple((str(c), int(k), ratio) for c, k, ratio in data["best"])
    config, score = data["single"]
    return FamilyScore(str(data["family"]), best, data["score"], (str(config), score))
