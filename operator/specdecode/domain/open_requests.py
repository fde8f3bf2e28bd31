"""What the requests still in flight at a look add to a side's evidence, decided once.

Three facts from a block's snapshot, never a guess: an open gap past the stage's stall
bound counts as one stall of its age (a lower bound); a request past the request timeout,
or silent past the baseline-derived silence bound, is one failed request for ErrorRate.
Why each, and why a healthy A/A pair is not failed: docs/internals.md, docs/measured.md.
"""

from __future__ import annotations

from dataclasses import replace

from specdecode.domain.in_flight import InFlight
from specdecode.domain.observations import LatencySamples
from specdecode.vocabulary import ItlDefinition


def stall_bound(
    baseline: LatencySamples, definition: ItlDefinition, quantile: float, tolerance: float
) -> float | None:
    """The stage's stall bound in seconds for a tail gate, or None while the baseline has no
    gap of that definition in the window."""
    per_token = definition is ItlDefinition.PER_TOKEN
    sketch = baseline.per_token_itl if per_token else baseline.per_chunk_itl
    if sketch.total == 0:
        return None
    return (1.0 + tolerance) * sketch.quantile(quantile)


def with_open_stalls(samples: LatencySamples, bound: float) -> tuple[LatencySamples, int]:
    """The side's window with each open gap over `bound` counted as one stall of its age
    in its newest block, and how many were added (0: the window as it was)."""
    snapshot = samples.in_flight
    if snapshot is None or not samples.blocks:
        return samples, 0
    gaps = snapshot.open_gaps_over(bound)
    if not gaps:
        return samples, 0
    newest = samples.blocks[-1]
    per_chunk, per_token = newest.per_chunk_itl.copy(), newest.per_token_itl.copy()
    for gap in gaps:
        per_chunk.add(gap)
        per_token.add(gap)
    counted = replace(
        newest, per_chunk_itl=per_chunk, per_token_itl=per_token, stalls=newest.stalls + len(gaps)
    )
    return replace(samples, blocks=(*samples.blocks[:-1], counted)), len(gaps)


def failed_in_flight(samples: LatencySamples | None, silence: float | None = None) -> int:
    """Requests of the side in flight at the window's end that have failed: past the request
    timeout, or (with a `silence` bound) silent longer than it; each counted once."""
    snapshot: InFlight | None = None if samples is None else samples.in_flight
    if snapshot is None:
        return 0
    return snapshot.failed(silence)


# The silence bound (see the module docstring): never under SILENCE_FLOOR_SECONDS, a
# wait no healthy engine step or first token reaches at the stages' loads (the default
# stages' P99 chunk gaps are 0.1-0.5 s on 80 ms steps); SILENCE_MULTIPLE x the baseline's
# longest wait (its SILENCE_QUANTILE, so a few of its own failed requests' last waits,
# also chunk gaps, do not lift it) where the baseline is slower than that.
SILENCE_FLOOR_SECONDS = 5.0
SILENCE_MULTIPLE = 4.0
SILENCE_QUANTILE = 0.999


def silence_bound(baseline: LatencySamples | None) -> float | None:
    """Seconds of silence past which a stream in flight is a failed request, from the
    baseline's window; None while the baseline shows no chunk gap and no first token."""
    if baseline is None:
        return None
    total = baseline.total
    waits = [s for s in (total.per_chunk_itl, total.time_to_first_token) if s.total]
    if not waits:
        return None
    longest = max(sketch.quantile(SILENCE_QUANTILE) for sketch in waits)
    return max(SILENCE_FLOOR_SECONDS, SILENCE_MULTIPLE * longest)
