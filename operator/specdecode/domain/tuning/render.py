"""The report as people and programs read it: JSON, Markdown, sparklines and an SVG.

All pure string building (no plotting library): the same report renders the same bytes,
so the ConfigMap, the kubectl plugin and the README example can never disagree.
"""

from __future__ import annotations

import dataclasses
import json
import math

from specdecode.domain.tuning.cells import NONE
from specdecode.domain.tuning.recommend import BreakEven
from specdecode.domain.tuning.report import Bounds, TuningReport

SPARKS = "▁▂▃▄▅▆▇█"


def to_json(report: TuningReport) -> str:
    """`report.json`: every field, keys sorted (stable bytes)."""
    return json.dumps(dataclasses.asdict(report), sort_keys=True, default=list, indent=1)


def _series(report: TuningReport) -> dict[str, list[float | None]]:
    series: dict[str, list[float | None]] = {}
    for row in report.rows:
        value = None if row.objective is None else row.objective.value
        series.setdefault(row.config, []).append(value)
    return series


def _scale(report: TuningReport) -> tuple[float, float]:
    values = [v for line in _series(report).values() for v in line if v is not None]
    return min([*values, 1.0]), max([*values, 1.0])


def sparklines(report: TuningReport) -> list[str]:
    """One line per config: the objective ratio over the ladder on one shared scale."""
    low, high = _scale(report)
    span = (high - low) or 1.0
    lines = [f"{'':<24} ratio over concurrency {list(report.loads)}; 1.0 = plain decoding"]
    for config, line in _series(report).items():
        marks = "".join(
            " " if v is None else SPARKS[min(7, int((v - low) / span * 8))] for v in line
        )
        shown = " ".join("-" if v is None else f"{v:.2f}" for v in line)
        lines.append(f"{report.labels[config]:<24} {marks}  {shown}")
    return lines


def svg(report: TuningReport, width: int = 640, height: int = 320) -> str:
    """Objective ratio against concurrency (log x axis), a line per config, 1.0 dashed."""
    loads = report.loads
    low, high = _scale(report)
    low, high, pad = low * 0.95, high * 1.05, 40
    spread = math.log(loads[-1] / loads[0]) or 1.0

    def x(load: int) -> float:
        return pad + (width - 3 * pad) * math.log(load / loads[0]) / spread

    def y(value: float) -> float:
        return height - pad - (height - 2 * pad) * (value - low) / (high - low)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
        f'<line x1="{pad}" x2="{width - 2 * pad}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" '
        'stroke="gray" stroke-dasharray="4"/>',
        *(f'<text x="{x(c):.1f}" y="{height - 12}" font-size="10">{c}</text>' for c in loads),
    ]
    for index, (config, line) in enumerate(_series(report).items()):
        color = f"hsl({index * 360 // max(len(report.labels), 1)},70%,40%)"
        points = " ".join(
            f"{x(c):.1f},{y(v):.1f}" for c, v in zip(loads, line, strict=True) if v is not None
        )
        parts.append(f'<polyline fill="none" stroke="{color}" points="{points}"/>')
        parts.append(
            f'<text x="{width - 2 * pad + 4}" y="{14 + 12 * index}" font-size="9" '
            f'fill="{color}">{report.labels[config]}</text>'
        )
    return "\n".join([*parts, "</svg>"]) + "\n"


def _text(bounds: Bounds | None) -> str:
    return "-" if bounds is None else bounds.text()


def break_even_text(crossing: BreakEven) -> str:
    """`> 16, <= 64 (about 41)`: the bounded crossing in words."""
    low = "< ladder" if crossing.above is None else f"> {crossing.above}"
    high = "beyond ladder" if crossing.at_or_below is None else f"<= {crossing.at_or_below}"
    point = "" if crossing.estimate is None else f" (about {crossing.estimate:.0f})"
    return f"{low}, {high}{point}"


def markdown(report: TuningReport) -> str:
    """`report.md`: the table per config x load, break-even, winners, schedule, picture."""
    lines = [
        f"# Tuning report ({report.objective})",
        "",
        f"GPU-seconds {report.gpu_seconds:.0f} (an exhaustive sweep: "
        f"{report.exhaustive_gpu_seconds:.0f}); {report.looks} looks; "
        f"{'done' if report.done else 'running'}.",
        "",
        "| config | load | TPOT speedup | throughput ratio | P99 tail ratio | alpha "
        "| accepted length | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report.rows:
        name = report.labels[row.config] + (" (dropped)" if row.dropped else "")
        figures = (
            row.tpot_speedup,
            row.throughput_ratio,
            row.tail_ratio,
            row.alpha,
            row.accepted_length,
        )
        cells = " | ".join(_text(f) for f in figures)
        lines.append(f"| {name} | {row.load} | {cells} | {row.seconds:.0f} |")
    lines += ["", "| config | break-even concurrency |", "|---|---|"]
    for config, crossing in report.break_even.items():
        lines.append(f"| {report.labels[config]} | {break_even_text(crossing)} |")
    lines += ["", "| band | winner | objective | decided |", "|---|---|---|---|"]
    for w in report.winners:
        name = "plain decoding" if w.config == NONE else report.labels[w.config]
        lines.append(f"| {w.low}-{w.high} | {name} | {_text(w.objective)} | {w.decided} |")
    lines += ["", "| family | weighted score | best k per load (0: plain decoding) |"]
    lines.append("|---|---|---|")
    for family in report.families:
        ks = ", ".join(str(k) for _, k, _ in family.best)
        lines.append(f"| {family.family} | {family.score:.3f} | {ks} |")
    schedule = "not supported by this vLLM release" if report.schedule is None else report.schedule
    lines += [
        "",
        f"Band weights: {list(report.band_weights)}",
        f"Weights from {report.weights_source}: recommends {report.recommendation}; "
        f"with equal weights: {report.uniform_recommendation}",
        f"Schedule (num_speculative_tokens_per_batch_size): {schedule}",
        "",
        "Rollout patch:",
        "```json",
        json.dumps(report.rollout_patch, sort_keys=True),
        "```",
        "",
        "```",
        *sparklines(report),
        "```",
    ]
    return "\n".join(lines) + "\n"
