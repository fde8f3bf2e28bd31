"""The silence bound, simulated: a stream silent past it is a failed request at the look.

A seeded closed-loop simulation of the default tail-latency stage's load (32 streams per
side, 32-token requests on ~85 ms steps, 1 % of chunk gaps 0.3-0.6 s prefill stalls, 5 % of
first tokens queued 0.5-2 s, and 2 % of requests preempted once, silent 2-8 s: healthy
waits, some past the 5 s floor) feeds the ErrorRate gate (maxErrorRate 0.02, minSamples 20)
a look every 15 s for 120 s after a 30 s warm-up, each look chained to the last so the
sequential boundary spends its error. Hangs start at the first measured second: a hung
request stops after 1-8 chunks (or before its first token: a late start) and ends only at
the 45 s request timeout.

- A/A: both sides healthy; the stage is Failed no more often than the gate's error (0.05).
- Controls: the same A/A pairs with a bound healthy waits reach (the baseline's median first
  token), or with the baseline's own silent requests not counted (no pairing), fail far
  more often than that.
- Hangs of 5 % and 20 % fail, and before first hang + 45 s (when the timeout would have
  counted them); with the old rule (only past the timeout) they fail no earlier than that.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import pytest
from domain_fixtures import T0, stage_obs
from gate_looks import evaluate_gate

from specdecode.api import GateSpec, GateType, GateVerdict
from specdecode.domain import open_requests
from specdecode.domain.gates import LookPlan
from specdecode.domain.in_flight import InFlight, OpenRequest
from specdecode.domain.latency_block import LatencyBlock
from specdecode.domain.observations import LatencySamples
from specdecode.domain.sketch import Sketch
from specdecode.domain.stage_state import GateRecord

pytestmark = pytest.mark.unit

ERRORS = GateSpec(name="error-rate", type=GateType.ERROR_RATE)  # 0.02, 20 requests
STREAMS, TOKENS, TIMEOUT, WARMUP = 32, 32, 45.0, 30.0
LOOKS = tuple(range(15, 121, 15))  # seconds after the warm-up
STEP = 0.085


@dataclasses.dataclass(frozen=True)
class Request:
    sent: float
    ttft: float
    gaps: tuple[float, ...]  # between its content chunks (the kept ones, if it hangs)
    end: float
    hung: bool
    kept: int  # content chunks it sends (a hung one: 0-8; 0 is a late start)

    def open_at(self, at: float) -> OpenRequest:
        last, t = self.sent, self.sent + self.ttft
        for gap in (0.0, *self.gaps)[: self.kept]:
            t += gap
            if t > at:
                break
            last = t
        return OpenRequest(age=at - self.sent, open_gap=at - last)


def _request(rng: random.Random, sent: float, hang: float) -> Request:
    ttft = STEP * (1 + rng.random()) + (rng.uniform(0.5, 2.0) if rng.random() < 0.05 else 0)
    gaps = []
    for _ in range(TOKENS - 1):
        u = rng.random()
        gaps.append(0.3 + 0.3 * rng.random() if u < 0.01 else STEP * (0.85 + 0.3 * u))
    if rng.random() < 0.02:  # preempted once: a healthy silence of seconds
        gaps[rng.randrange(len(gaps))] = rng.uniform(2.0, 8.0)
    if sent >= 0 and hang and rng.random() < hang:
        kept = rng.randint(0, 8)  # 0: a late start, no first token
        return Request(sent, ttft, tuple(gaps[: max(kept - 1, 0)]), sent + TIMEOUT, True, kept)
    return Request(sent, ttft, tuple(gaps), sent + ttft + sum(gaps), False, TOKENS)


def _stream(rng: random.Random, hang: float) -> list[Request]:
    made, t = [], -WARMUP - rng.uniform(0, 3)
    while t < LOOKS[-1]:
        made.append(_request(rng, t, hang))
        t = made[-1].end
    return made


def _side(streams: list[list[Request]], oracle: bool = False) -> Iterator[LatencySamples]:
    """The side's window at each look. A request's gaps enter the window when it ends
    (regular ones by count at STEP: all lie below every stall, so only their number moves a
    high quantile); the in-flight snapshot lists each stream's open request. `oracle`: a
    hung request is known failed from its send (what no instrument can see)."""
    ended = sorted((r for stream in streams for r in stream if r.end >= 0), key=lambda r: r.end)
    gaps, firsts, ok, failed, i = Sketch(), Sketch(), 0, 0, 0
    for at in LOOKS:
        while i < len(ended) and ended[i].end <= at:
            r = ended[i]
            ok, failed = ok + (not r.hung), failed + r.hung
            if r.kept:
                firsts.add(r.ttft)
            slow = [g for g in r.gaps if g > 0.2]
            for gap in slow:
                gaps.add(gap)
            gaps.add(STEP, len(r.gaps) - len(slow))
            i += 1
        flying = [r for stream in streams for r in stream if r.sent <= at < r.end]
        known = sum(r.hung for r in flying) if oracle else 0
        block = LatencyBlock(
            start=0.0,
            seconds=at,
            per_chunk_itl=gaps.copy(),
            per_token_itl=gaps.copy(),
            time_to_first_token=firsts.copy(),
            requests_ok=ok,
            requests_failed=failed + known,
            in_flight=InFlight.of(
                (r.open_at(at) for r in flying if not (oracle and r.hung)), TIMEOUT
            ),
        )
        yield LatencySamples(blocks=(block,), window_seconds=at, shards=1)


def _stage(
    seed: int, hang: float, paired: bool = True, oracle: bool = False
) -> tuple[float | None, float | None]:
    """(when the gate Failed, when the first hang was sent) in seconds after the warm-up.
    `paired`: the baseline's snapshot is judged (else its silent requests are not counted)."""
    rng = random.Random(seed)
    base_streams = [_stream(rng, 0.0) for _ in range(STREAMS)]
    cand_streams = [_stream(rng, hang) for _ in range(STREAMS)]
    hangs = [r.sent for stream in cand_streams for r in stream if r.hung]
    baseline, candidate = _side(base_streams), _side(cand_streams, oracle)
    previous: GateRecord | None = None
    for at, base, cand in zip(LOOKS, baseline, candidate, strict=True):
        judged = base
        if not paired:
            unlisted = dataclasses.replace(base.blocks[-1], in_flight=None)
            judged = dataclasses.replace(base, blocks=(unlisted,))
        seen = stage_obs("s", baseline=judged, candidate=cand)
        plan = LookPlan(measured_seconds=at, max_seconds=600)
        previous = evaluate_gate(ERRORS, seen, previous, T0, plan)
        if previous.verdict is GateVerdict.FAILED:
            return at, min(hangs, default=None)
    return None, min(hangs, default=None)


def _failed_share(runs: int, **kwargs: bool) -> float:
    return sum(_stage(seed, 0.0, **kwargs)[0] is not None for seed in range(runs)) / runs


def _every_step_reaches(baseline: LatencySamples | None) -> float:
    return 0.05  # shorter than one healthy step: a bound every stream in flight reaches


RUNS = 100


def test_an_a_a_pair_under_the_bound_fails_no_more_often_than_the_gates_error() -> None:
    share = _failed_share(RUNS)
    print(f"A/A Failed in {share:.3f} of {RUNS} stages (error 0.05)")
    assert share <= 0.05


def test_control_without_the_pairing_a_too_small_bound_fails_a_a_pairs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unpaired_at_bound = _failed_share(40, paired=False)
    with monkeypatch.context() as patch:
        patch.setattr("specdecode.domain.gates.error_rate.silence_bound", _every_step_reaches)
        paired = _failed_share(40)
        unpaired = _failed_share(40, paired=False)
    print(
        f"A/A Failed: bound 0.05 s paired {paired:.2f}, unpaired {unpaired:.2f}; "
        f"the real bound unpaired {unpaired_at_bound:.2f}"
    )
    # a bound every healthy stream reaches fails A/A pairs, and more so unpaired
    assert paired > 0.1 and unpaired > 0.1


@pytest.mark.parametrize("hang", [0.05, 0.2])
def test_hangs_fail_about_when_the_requests_suffice(
    hang: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first look with enough requests to fail: the oracle's, which knows each hang from
    # its send. The silence bound (8 s here: 4 x the baseline's 2 s queued first tokens)
    # lags it (the hangs of the last 8 s before a look are not silent long enough yet, and
    # near the boundary a few failures more or less move a crossing by a look or two: 0-45 s
    # at 5 %, 0-15 s at 20 %, measured); counting only past the timeout lags it more, or
    # never fails in 120 s (7 of 10 at 5 %).
    seeds = range(10)
    runs = [_stage(seed, hang) for seed in seeds]
    oracle = [_stage(seed, hang, oracle=True)[0] for seed in seeds]
    with monkeypatch.context() as patch:
        patch.setattr(open_requests, "SILENCE_FLOOR_SECONDS", 10 * TIMEOUT)
        old = [_stage(seed, hang)[0] for seed in seeds]
    after = [f - first for f, first in runs if f is not None and first is not None]
    print(f"{hang:.0%} hung, Failed at (s after the warm-up): silence bound {[f for f, _ in runs]}")
    print(f"  oracle {oracle}; timeout only {old}; after the first hang {after}")
    pairs = zip(runs, oracle, old, strict=True)
    assert all(f is not None and o is not None and f <= o + 45 for (f, _), o, _ in pairs)
    # earlier than the old rule, which waits for the timeout to count a hang
    assert all(
        t is None or (f is not None and f < t)
        for (f, _), _, t in zip(runs, oracle, old, strict=True)
    )
    if hang == 0.2:  # within 30 s of the first hang, before its timeout could count it
        assert len(after) == len(seeds) and max(after) < 31 < TIMEOUT
