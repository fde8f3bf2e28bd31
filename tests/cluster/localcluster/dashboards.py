"""The chart's Grafana dashboard, run against the local Prometheus as Grafana runs it, and drawn.

Why: a dashboard whose queries were only read, never run, shows nothing on the day it is
needed (a misspelt label, a counter `increase()` cannot see, a series that is gone before
the scrape). Here each panel's PromQL gets its variables the way Grafana substitutes them
(`$namespace`, `$rollout`, `$tuning` as one selected value each; `$__rate_interval` as
max(step + scrape interval, 4 x scrape interval)), runs as a range query over the time a
rollout was live, and is drawn to a PNG. The picture is then read back, and every series
must have left its own colour inside the plot area (a series with no point to draw is
caught). This is a picture of the data for people, drawn by this module: it does not
test Grafana's own rendering; the weight of the checks is in the queries' answers.
"""

from __future__ import annotations

import colorsys
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

SCRAPE_SECONDS = 1.0  # the local Prometheus' scrape interval (localcluster.prometheus)
LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")
FIRST_BY = re.compile(r"\bby\s*\(([^)]*)\)")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*(\w+)\)$")


@dataclass(frozen=True)
class Target:
    """One query of one panel."""

    panel: str
    panel_type: str
    expr: str
    legend: str | None

    def required_labels(self) -> set[str]:
        """Labels the panel shows: its legend's, else its first `by (...)`'s (`le` is
        consumed by histogram_quantile)."""
        named = set(LEGEND_LABEL.findall(self.legend or ""))
        if named:
            return named
        grouped = FIRST_BY.search(self.expr)
        return (
            {label.strip() for label in grouped.group(1).split(",")} - {"le"} if grouped else set()
        )


@dataclass(frozen=True)
class Series:
    """One returned series: its labels and its (unix time, value) points (NaN dropped)."""

    labels: dict[str, str]
    points: list[tuple[float, float]]

    @property
    def last(self) -> float:
        return self.points[-1][1]


def targets(dashboard: Mapping[str, Any]) -> list[Target]:
    """Every query of every panel, rows skipped (they hold no query)."""
    found = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            found.append(
                Target(panel["title"], panel["type"], target["expr"], target.get("legendFormat"))
            )
    return found


def variable_queries(dashboard: Mapping[str, Any]) -> dict[str, str]:
    """The template variables filled by a `label_values(...)` query, by name."""
    return {
        variable["name"]: variable["query"]["query"]
        for variable in dashboard["templating"]["list"]
        if variable["type"] == "query"
    }


def rate_interval(step: float) -> str:
    """Grafana's `$__rate_interval` for a range query of this step."""
    return f"{round(max(step + SCRAPE_SECONDS, 4 * SCRAPE_SECONDS))}s"


def substitute(expr: str, values: Mapping[str, str], step: float) -> str:
    """`expr` with Grafana's variables replaced (longest names first, `${x}` and `$x`)."""
    text = expr.replace("$__rate_interval", rate_interval(step))
    text = text.replace("$__interval", f"{round(step)}s")
    for name in sorted(values, key=len, reverse=True):
        text = text.replace(f"${{{name}}}", values[name]).replace(f"${name}", values[name])
    return text


class PrometheusApi:
    """The two read endpoints a dashboard uses: range queries and label values."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        """A range query; any answer but success is an error naming the query."""
        params = {"query": expr, "start": start, "end": end, "step": step}
        body = self._get("/api/v1/query_range", params)
        return [
            Series(
                dict(result["metric"]),
                [(float(t), float(v)) for t, v in result["values"] if v.lower() != "nan"],
            )
            for result in body["data"]["result"]
        ]

    def label_values(self, query: str, start: float, end: float) -> list[str]:
        """What Grafana's `label_values(selector, label)` variable query offers."""
        parsed = LABEL_VALUES.match(query.strip())
        if parsed is None:
            raise ValueError(f"not a label_values query: {query}")
        selector, label = parsed.groups()
        params = {"match[]": selector, "start": start, "end": end}
        values: list[str] = self._get(f"/api/v1/label/{label}/values", params)["data"]
        return values

    def _get(self, path: str, params: Mapping[str, Any]) -> dict[str, Any]:
        reply = httpx.get(f"{self.url}{path}", params=dict(params), timeout=15)
        body: dict[str, Any] = reply.json()
        if reply.status_code != 200 or body.get("status") != "success":
            raise RuntimeError(f"{path} {params.get('query') or params}: {reply.text[:500]}")
        return body


def palette(count: int) -> list[tuple[int, int, int]]:
    """`count` colours far from the greys of axes, grid and text, each distinct in RGB."""
    colours = []
    for index in range(count):
        red, green, blue = colorsys.hsv_to_rgb(index / max(count, 1), 0.9, 0.85)
        colours.append((round(red * 255), round(green * 255), round(blue * 255)))
    return colours


def draw(
    title: str, series: list[tuple[str, Series]], path: Path, start: float, banded: bool
) -> int:
    """Draw `series` (legend text, data) as lines over seconds since `start` into a PNG;
    return how many of their colours the written picture shows inside the plot area.

    `banded`: each series in its own horizontal band (as Grafana's state timelines, stats
    and tables show one row per series), so that series of equal values (a verdict that
    is 1, two equal totals) do not hide each other.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image
    import matplotlib.pyplot as plt

    colours = palette(len(series))
    figure, axes = plt.subplots(figsize=(9, 4), dpi=80)
    try:
        for band, ((legend, data), colour) in enumerate(zip(series, colours, strict=True)):
            xs = [t - start for t, _ in data.points]
            ys = [v for _, v in data.points]
            if banded:
                scale = max((abs(v) for v in ys), default=0.0) or 1.0
                ys = [band + 0.2 + 0.6 * v / scale for v in ys]
            axes.plot(
                xs,
                ys,
                color=[c / 255 for c in colour],
                label=legend,
                linewidth=2.5,
                marker="s" if len(xs) < 2 else None,
                antialiased=False,
                drawstyle="steps-post",
            )
        axes.set_title(title)
        axes.set_xlabel("seconds since the rollout was created")
        axes.grid(True, color="#dddddd")
        if series:
            axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small")
        figure.tight_layout()
        figure.savefig(path)
        box = axes.get_window_extent()
        height = figure.get_size_inches()[1] * figure.dpi
    finally:
        plt.close(figure)
    pixels = matplotlib.image.imread(str(path))
    top, bottom = round(height - box.y1), round(height - box.y0)
    inside = pixels[top:bottom, round(box.x0) : round(box.x1), :3]
    rgb = (inside * 255).round().astype(int).reshape(-1, 3)
    seen = {(int(r), int(g), int(b)) for r, g, b in {tuple(p) for p in rgb.tolist()}}
    return sum(1 for colour in colours if colour in seen)


def legend_text(target: Target, series: Series) -> str:
    """The series' legend as Grafana writes it (`{{label}}` filled in)."""
    if not target.legend:
        return ",".join(f"{k}={v}" for k, v in sorted(series.labels.items()))
    return LEGEND_LABEL.sub(lambda m: series.labels.get(m.group(1), ""), target.legend)
