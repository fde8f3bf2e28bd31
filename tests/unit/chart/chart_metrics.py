"""Metric names that really exist: the operator's own and the (simulated) vLLM engine's.

Built from the live prometheus_client registries of `OperatorMetrics` and the simulator's
`EngineMetrics` (which mirrors vLLM 0.11.2's names), so a dashboard or alert that mentions a
renamed or invented metric fails its test.
"""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry

from specdecode.adapters.telemetry import OperatorMetrics
from specdecode_sim.metrics import EngineMetrics

SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gauge": ("",),
}
# PromQL words that look like metric names but are functions, keywords or label names.
PROMQL_WORDS = frozenset(
    [
        "sum",
        "max",
        "min",
        "avg",
        "count",
        "rate",
        "increase",
        "irate",
        "histogram_quantile",
        "absent",
        "by",
        "without",
        "on",
        "group_left",
        "group_right",
        "scalar",
        "bool",
        "and",
        "or",
        "unless",
        "le",
        "offset",
        "label_values",
        "time",
        "up",
        "",
    ]
)
IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def _names(registry: CollectorRegistry) -> set[str]:
    names: set[str] = set()
    for family in registry.collect():
        for suffix in SUFFIXES.get(family.type, ("",)):
            names.add(family.name + suffix)
    return names


def operator_metric_names() -> set[str]:
    """Series names the operator exports (`specdecode_*`)."""
    return _names(OperatorMetrics().registry)


def vllm_metric_names() -> set[str]:
    """Series names vLLM exports with speculative decoding on (`vllm:*`)."""
    return _names(EngineMetrics("model", 4096, 3).registry)


def metrics_in(expression: str) -> set[str]:
    """Metric names an expression selects: identifiers outside braces, strings and ranges."""
    stripped = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expression)
    stripped = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\boffset\s+\w+", " ", stripped)
    stripped = re.sub(r"\b(?:by|without|on|group_left|group_right)\s*\([^)]*\)", " ", stripped)
    found = {m.group(0) for m in IDENTIFIER.finditer(stripped)}
    return {name for name in found if name not in PROMQL_WORDS and not name.startswith("$")}
