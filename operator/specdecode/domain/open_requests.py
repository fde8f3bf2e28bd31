"""What the requests still in flight at a look add to a side's evidence, decided once.

A window's requests in flight are its newest block's snapshot (`domain.in_flight`): none of
them has ended in a block of the window, so what they add here is never counted twice.
When one ends later, its end lands in a later block and the snapshot no longer lists it:
the later report supersedes the open one. Two facts are taken from a snapshot, no guess:

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


def failed_in_flight(samples: LatencySamples | None) -> int:
    """Requests of the side in flight past the request timeout at the window's end."""
    snapshot: InFlight | None = None if samples is None else samples.in_flight
    return 0 if snapshot is None else snapshot.past_timeout()
