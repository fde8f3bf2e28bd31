"""Bursty delivery: a side whose chunks reach the load client together, not step by step.

Why: the latency gates time chunks where the client reads them. A chunk gap under
BURST_GAP_SECONDS is no engine step (vLLM sends one content chunk per request per output
it hands over, and a GPU or CPU step takes milliseconds); it means the chunks were held
and written or read at once (an API server or load client starved of CPU). Then a
request's first-to-last span, and so its time per output token, reads short or long as
the burst falls, and the chunk-gap tail measures the bursts: Speedup and TailLatency
refuse the look (Inconclusive) in either direction. The per-chunk gap sketch holds
content chunks only (the role and usage chunks carry no tokens). More: docs/measured.md.
"""

from __future__ import annotations

from specdecode.domain.gate_measures import SATURATED, SATURATION_SIDES, UnsentLimit
from specdecode.domain.observations import LatencySamples
from specdecode.domain.sketch import Sketch, bucket_index

# Below any engine step (a real GPU step is milliseconds): healthy reference and simulator
# streams showed no gap under 1 ms, at 8 and 64 streams (docs/measured.md). Not 0.1 ms: a
# sender holding answers and writing their chunks 0.15-0.5 ms apart stepped over that floor
# (a 67x false speedup). The sketch sees gaps down to 1 us (its lowest bucket).
BURST_GAP_SECONDS = 1e-3
# The share of a side's chunk gaps under BURST_GAP_SECONDS above which its timings are
# the bursts', not the engine's. Healthy streams measured 0 % (docs/measured.md).
MAX_BURST_SHARE = 0.05

_BURST_BUCKET = bucket_index(BURST_GAP_SECONDS)


def burst_gaps(gaps: Sketch) -> tuple[int, int]:
    """(gaps under BURST_GAP_SECONDS, all gaps) of a per-chunk gap sketch.

    Counted by bucket: buckets wholly below the bucket holding the floor (so the floor is
    exact to the sketch's 0.5 %, and a gap at the floor itself never counts).
    """
    below = sum(count for index, count in gaps.counts.items() if index < _BURST_BUCKET)
    return below, gaps.total


def bursty_delivery(
    baseline: LatencySamples, candidate: LatencySamples, unsent: UnsentLimit
) -> str | None:
    """Why the look cannot be trusted because a side's chunks arrived in bursts, or None.

    The reason starts as every saturation refusal does (`SATURATED`, then "the <side>"),
    so the SpecDecodeLoadSaturated gauge names the side.
    """
    for side, samples in zip(SATURATION_SIDES, (baseline, candidate), strict=True):
        below, total = burst_gaps(samples.per_chunk_itl)
        if total and below > MAX_BURST_SHARE * total:
            return (
                f"{SATURATED}: the {side} stream arrives in bursts: {below} of its {total} "
                f"chunk gaps ({below / total:.0%}) are under {BURST_GAP_SECONDS * 1000:g} ms "
                f"(over {MAX_BURST_SHARE:.0%}), so its timings are not the engine's (an API "
                f"server or load client short of CPU); {unsent.delay_remedy()}"
            )
    return None
