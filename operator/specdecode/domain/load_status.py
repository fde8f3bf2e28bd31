"""What status says about a stage run's shadow load: shards, requests and their outcomes,
its own delay, and the candidate's acceptance per traffic group.

Pure: derived from the windows the look judged, so an on-call reader sees, next to the
verdicts, whether the instrument behind them was whole and keeping up, and which traffic
the candidate's drafts fail (`acceptance_split`). The wire's form: `reconciler.stage_load`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from specdecode.domain.acceptance_split import GroupAcceptance, acceptance_by_traffic
from specdecode.domain.observations import LatencySamples, MetricError, StageObservations

MAX_NOTES = 8


@dataclass(frozen=True)
class LoadSummary:
    """A look's load: the shards that answered per side ("2/2"), the requests finished on
    both, the clients' worst P99 own delay in ms (None: none measured), what the windows
    lack, each side's outcomes in one line, and the candidate's acceptance per group."""

    shards: str
    requests: int
    client_delay_p99_ms: float | None
    notes: tuple[str, ...]
    outcomes: tuple[str, ...]
    acceptance_by_traffic: tuple[GroupAcceptance, ...]


@dataclass(frozen=True)
class LoadLook:
    """The load summary (None: no load windows) of the look at the stage run `stage`
    begun at `started_at`; the status written takes it for that run only, so a run the
    same pass restarted or replaced keeps none."""

    stage: str
    started_at: datetime | None
    summary: LoadSummary | None


def load_status(observed: StageObservations | None) -> LoadSummary | None:
    """The load summary of a look; None when the look had no load windows (Mirror)."""
    if observed is None:
        return None
    sides = (observed.baseline_latency, observed.candidate_latency)
    windows = [side for side in sides if isinstance(side, LatencySamples)]
    if not windows:
        return None
    notes: list[str] = []
    for side in sides:
        if isinstance(side, LatencySamples):
            notes += [side.incomplete] if side.incomplete else []
            notes += side.gaps
        elif isinstance(side, MetricError):
            notes.append(side.message)
    delays = [w.client_delay.quantile(0.99) for w in windows if w.client_delay.total]
    candidate = observed.candidate_latency
    split = (
        acceptance_by_traffic(candidate, observed.candidate_acceptance)
        if isinstance(candidate, LatencySamples)
        else []
    )
    return LoadSummary(
        shards="/".join(str(s.shards) if isinstance(s, LatencySamples) else "0" for s in sides),
        requests=sum(w.requests_ok for w in windows),
        client_delay_p99_ms=round(max(delays) * 1000, 3) if delays else None,
        notes=tuple(notes[:MAX_NOTES]),
        outcomes=tuple(
            _outcomes(name, side)
            for name, side in zip(("baseline", "candidate"), sides, strict=True)
            if isinstance(side, LatencySamples)
        ),
        acceptance_by_traffic=tuple(split),
    )


def _outcomes(name: str, side: LatencySamples) -> str:
    """One side's requests by outcome, its stalls, its slot time and what is in flight now
    (with the longest open gap: a hang shows here before its timeout), in one line."""
    total = side.total
    counts = [f"{total.requests_ok} ok"]
    counts += [f"{n} {outcome}" for outcome, n in sorted(total.failures.items())]
    slot = total.slot_seconds
    held = f"; slot P99 {slot.quantile(0.99):.2f} s" if slot.total else ""
    now = total.in_flight
    flying = ""
    if now is not None and now.count:
        flying = f"; {now.count} in flight, longest silent {now.longest[0].open_gap:.1f} s"
    return f"{name}: {', '.join(counts)}; {total.stalls} stalls{held}{flying}"
