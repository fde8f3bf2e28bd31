"""Workload class of a request: chat, code, rag, translation or math.

Taken from the request when the client says it (body field `specdecode_workload` or
header `X-Workload-Class`, which vLLM would ignore), else inferred from the prompt with
keyword heuristics, else the configured default.
"""

from __future__ import annotations

import re

from specdecode_sim.acceptance import WORKLOAD_CLASSES

_HINTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "code",
        re.compile(r"```|\bdef \w+\(|\bclass \w+|\bfunction\b|#include|\bimport \w+|;\s*$", re.M),
    ),
    (
        "translation",
        re.compile(r"\btranslat(e|ion)\b|\bin (french|german|spanish|english)\b", re.I),
    ),
    (
        "rag",
        re.compile(
            r"\b(context|document|passage|sources?)\s*:|based on the (context|document)", re.I
        ),
    ),
    ("math", re.compile(r"\b(solve|equation|integral|prove|compute)\b|\d+\s*[-+*/^=]\s*\d+", re.I)),
)


def infer_workload(prompt: str, default: str) -> str:
    """First class whose hint matches the prompt, else `default`."""
    for name, pattern in _HINTS:
        if pattern.search(prompt):
            return name
    return default


def resolve_workload(explicit: str | None, prompt: str, default: str) -> str | None:
    """The class for a request; None when an explicit value is not a known class."""
    if explicit is not None:
        lowered = explicit.strip().lower()
        return lowered if lowered in WORKLOAD_CLASSES else None
    return infer_workload(prompt, default)
