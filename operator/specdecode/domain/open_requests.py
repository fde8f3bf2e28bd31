"""What the requests still in flight at a look add to a side's evidence, decided once.

A window's requests in flight are its newest block's snapshot (`domain.in_flight`): none of
them has ended in a block of the window, so what they add here is never counted twice.
When one ends later, its end lands in a later block and the snapshot no longer lists it:
the later report supersedes the open one. Three facts are taken from a snapshot, no guess:

- **A stall of its age.** An open gap longer than the stage's stall bound is a chunk gap
  at least that long, whatever comes next (its next chunk, or its end). It counts as one
  chunk gap and one per-token gap of one token (as a failed request's last wait does, see
  `specdecode_load.connection`), in the window's newest block, so the time block stays the
  tail gate's unit of independence. Counting it at its age is a lower bound on the gap it
  will be, so the side's quantile is a lower bound on the one its ended requests will show.
  Why a bound: a short open gap (a request 10 ms into an 80 ms step) is far below the gap
  it will be, and counted at its age it would pull the side's quantile down; a gap already
  past the bound lies above the quantile the gate allows either way.
- **A failure once past the request timeout.** A request older than the load pod's
  request timeout has failed, though no block says so yet (the pod stopped, or its timer
  has not run): for ErrorRate, one failed request (the request is the unit there).
- **A failure once silent past the silence bound.** A stream silent longer than
  `silence_bound` (no content chunk for that long, or no first token that long after its
  send: a late start) is one failed request for ErrorRate at that look, as a client's read
  timeout would have ended it; it need not wait for the request timeout (default 45 s),
  by which time a hanging config has had a whole stage to pass on its other requests. The
  bound is the baseline's: max(SILENCE_FLOOR_SECONDS, SILENCE_MULTIPLE x the longest wait
  the baseline's window shows, its SILENCE_QUANTILE of chunk gaps and of first-token
  times), applied to both sides, and the baseline's own silent requests count as its
  failures. Why that cannot fail a healthy A/A pair: the bound is 4x the waits the
  baseline itself shows nearly always (all but 0.1 %), and never under the floor, which
  an engine step or a first token reaches only in rare events (a preemption's recompute);
  those happen on both sides alike (the same prompts, the same engine), and the gate
  judges the difference of the two failure shares at its own error
  (`tests/unit/domain/test_silence_bound.py`: with 2 % of requests preempted for 2-8 s,
  A/A pairs are not Failed; a bound healthy streams reach fails them, with or without the
  pairing). A candidate merely slower in its tail (within the tail gate's tolerance) is far
  below it: that is the tail gate's question.
  A silent stream that later resumes was still a failure at that look (a verdict stays).

The stall bound is the tail gate's own limit as a duration: (1 + tolerance) x the baseline's
q-quantile of the gate's ITL over the window's blocks. A candidate gap past it is beyond
what the gate allows the candidate's q-quantile to be. Both sides' open gaps are judged
against the same bound; without a baseline quantile (no blocks yet) nothing is added.
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
