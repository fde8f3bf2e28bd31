"""How much shadow-load machinery a stage needs: measuring processes and pods per side.

Why sized: one process times only so many chunks per second before its own loop delays
the timestamps the tail gate judges. The stage's load shape gives the chunk rate; a sizing
too small shows at run time as a saturated (Inconclusive) look. More: docs/internals.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class LoadCapacity:
    """What sizing reads of `spec.analysis.traffic.loadGenerator`, built by the boundary
    (`reconciler.analysis_boundary.capacity_of`): the domain holds no wire model."""

    chunks_per_second_per_process: int  # what one measuring process times without delay
    assumed_step_seconds: float  # the engine step a closed loop's chunk rate comes from
    max_processes_per_pod: int
    max_pods_per_side: int


@dataclass(frozen=True)
class LoadShape:
    """Load pods per side and measuring processes per pod."""

    pods_per_side: int
    processes_per_pod: int


def expected_chunks_per_second(
    concurrency: int | None, request_rate: float | None, max_tokens: int, step_seconds: float
) -> float:
    """Chunks per second one side's load must time, at most."""
    if concurrency is not None:
        return concurrency / step_seconds
    return (request_rate or 0.0) * max_tokens


def size_load(
    generator: LoadCapacity,
    concurrency: int | None,
    request_rate: float | None,
    max_tokens: int,
) -> LoadShape:
    """The smallest shape whose processes stay within their measured capacity.

    Capped by `max_pods_per_side x max_processes_per_pod`: past that the look reports
    saturation rather than the operator creating unbounded pods. A closed loop never gets
    more processes than streams (a process with no stream measures nothing).
    """
    rate = expected_chunks_per_second(
        concurrency, request_rate, max_tokens, generator.assumed_step_seconds
    )
    processes = max(1, math.ceil(rate / generator.chunks_per_second_per_process))
    if concurrency is not None:
        processes = min(processes, concurrency)
    most = generator.max_pods_per_side * generator.max_processes_per_pod
    processes = min(processes, most)
    pods = math.ceil(processes / generator.max_processes_per_pod)
    return LoadShape(pods_per_side=pods, processes_per_pod=math.ceil(processes / pods))
