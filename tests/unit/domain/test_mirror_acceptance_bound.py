"""Mirror's acceptance bound holds its error with no assumed correlation (issue 33).

Seeded simulation of the hardest case for a bound from the counters alone: every request
all or nothing (each of its drafts fully accepted, or none: intra-request correlation 1),
and request lengths that differ widely (nine in ten short, one in ten long), so a few long
requests carry most drafts. A look sees the candidate's counters (drafts, draft tokens,
accepted tokens, per-position counts, finished requests) and vLLM's generation-token
histogram (1-2-5 buckets), as Prometheus gives them under Mirror traffic.

At the threshold (true alpha = minAlpha) a lower bound above the truth is a wrong pass and
an upper bound below it a wrong failure; each may happen at most at the look's error. The
control: the replaced rule (RHO = 0.25, `domain_replaced_rules`) passes wrongly far more
often on the same data. And the length bound is what makes it hold: without the histogram
the gate judges nothing, naming the series.
"""

from __future__ import annotations

import random

import pytest
from domain_fixtures import T0
from domain_replaced_rules import assumed_correlation_interval
from gate_looks import evaluate_gate

from specdecode.api import GateSpec, GateType, GateVerdict
from specdecode.domain.acceptance_bound import acceptance_interval
from specdecode.domain.gates import LookPlan
from specdecode.domain.observations import AcceptanceCounts, StageObservations
from specdecode.domain.stats import Interval

pytestmark = pytest.mark.unit

K = 3
TRUE_ALPHA = 0.6
ERROR = 0.05
TRIALS = 2000
REQUESTS = 400
# The allowed rate of wrong verdicts: the error plus the binomial noise of TRIALS looks.
ALLOWED = ERROR + 2.33 * (ERROR * (1 - ERROR) / TRIALS) ** 0.5


def bucket_edge(tokens: int) -> float:
    """vLLM's 1-2-5 bucket upper edge holding `tokens` (build_1_2_5_buckets)."""
    scale = 1
    while True:
        for mantissa in (1, 2, 5):
            if tokens <= mantissa * scale:
                return float(mantissa * scale)
        scale *= 10


def window(rng: random.Random) -> AcceptanceCounts:
    """REQUESTS finished requests, each all or nothing, of widely varying length."""
    drafts = accepted = longest = 0
    for _ in range(REQUESTS):
        steps = rng.randint(10, 30) if rng.random() < 0.9 else rng.randint(200, 400)
        full = rng.random() < TRUE_ALPHA  # every draft of the request accepted, or none
        drafts += steps
        accepted += K * steps if full else 0
        longest = max(longest, steps * (1 + K) if full else steps)  # tokens it generated
    per_position = tuple(float(accepted // K) for _ in range(K))
    return AcceptanceCounts(
        drafts=float(drafts),
        draft_tokens=float(K * drafts),
        accepted_tokens=float(accepted),
        per_position_accepted=per_position,
        requests=float(REQUESTS),
        longest_request_tokens=bucket_edge(longest),
        drafts_scraped=True,
    )


def wrong_rates(bound: str, seed: int) -> tuple[float, float]:
    """Shares of looks whose lower bound passes, or upper bound fails, the true alpha."""
    rng = random.Random(seed)
    passes = fails = 0
    for _ in range(TRIALS):
        counts = window(rng)
        found: Interval | None
        if bound == "new":
            found = acceptance_interval(
                counts.drafts,
                counts.draft_tokens,
                counts.accepted_tokens,
                counts.longest_request_tokens,
                ERROR,
            )
        else:
            found = assumed_correlation_interval(
                counts.drafts,
                counts.draft_tokens,
                counts.accepted_tokens,
                counts.per_position_accepted,
                ERROR,
                counts.requests,
            )
        assert found is not None
        passes += found.lower > TRUE_ALPHA
        fails += found.upper < TRUE_ALPHA
    return passes / TRIALS, fails / TRIALS


def test_the_bound_holds_its_error_with_all_or_nothing_requests() -> None:
    wrong_pass, wrong_fail = wrong_rates("new", seed=41)
    print(f"no assumed correlation: wrong pass {wrong_pass:.4f}, wrong fail {wrong_fail:.4f}")
    assert wrong_pass <= ALLOWED and wrong_fail <= ALLOWED


def test_control_the_assumed_correlation_fails_on_the_same_data() -> None:
    wrong_pass, wrong_fail = wrong_rates("replaced", seed=41)
    print(f"RHO = 0.25: wrong pass {wrong_pass:.4f}, wrong fail {wrong_fail:.4f}")
    assert wrong_pass > 2 * ALLOWED and wrong_fail > 2 * ALLOWED


def test_without_the_length_histogram_mirror_judges_nothing_naming_it() -> None:
    gate = GateSpec(name="alpha", type=GateType.ACCEPTANCE, min_alpha=0.2)
    counts = window(random.Random(42))
    plan = LookPlan(measured_seconds=300, max_seconds=600, mirror=True)
    for longest, expected in ((counts.longest_request_tokens, True), (None, False)):
        seen = StageObservations(
            stage_name="s",
            candidate_acceptance=AcceptanceCounts(
                **{**counts.__dict__, "longest_request_tokens": longest}
            ),
        )
        result = evaluate_gate(gate, seen, None, T0, plan)
        if expected:  # alpha 0.6 against 0.2 over 400 requests: passes, naming its basis
            assert result.verdict is GateVerdict.SUCCESSFUL, result.reason
            assert "all-or-nothing requests" in (result.reason or "")
        else:
            assert result.verdict is GateVerdict.INCONCLUSIVE
            assert "vllm:request_generation_tokens" in (result.reason or "")
