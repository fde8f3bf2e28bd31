"""`decide_pass` composes the checks laid over the state machine's decision: the vLLM
release check, the scrape check and the apply's findings, in their precedence (Degraded
keeps the first reason). Tested here, on the function production calls, so dropping a
check from `decide_pass` fails a test."""

from __future__ import annotations

from datetime import timedelta

import pytest
from domain_fixtures import analyzing, at, make_spec, planned, shadows_ready

from specdecode.api.status import ConditionStatus
from specdecode.domain.apply_findings import NOT_OWNED
from specdecode.domain.conditions import DEGRADED
from specdecode.domain.decision import Decision
from specdecode.domain.engine_metrics import METRICS_UNAVAILABLE, EnginePod
from specdecode.domain.engine_version import VERSION_MISMATCH, RunningVersion
from specdecode.domain.pass_decision import EngineScrape, Seen, decide_pass
from specdecode.domain.rollout_state import FindingsRecord, RolloutState

pytestmark = pytest.mark.unit

SPEC = make_spec()
PODS = (EnginePod("llama-baseline-1-a", at(0)), EnginePod("llama-candidate-1-b", at(0)))
GRACE = timedelta(seconds=35)


def unscraped(seconds: float) -> EngineScrape:
    """Both engines Ready since t=0, Prometheus holding series of neither."""
    return EngineScrape("team-a", PODS, frozenset(), GRACE, at(seconds))


def seen(
    status: RolloutState,
    engine_scrape: EngineScrape | None = None,
    running_versions: tuple[RunningVersion, ...] = (),
) -> Seen:
    return Seen(
        status=status,
        generation=1,
        observations=planned(SPEC, shadows_ready(), status),
        running_versions=running_versions,
        engine_scrape=engine_scrape,
    )


def degraded_reason(decision: Decision) -> str | None:
    found = next((c for c in decision.status.conditions if c.type == DEGRADED), None)
    return found.reason if found and found.status is ConditionStatus.TRUE else None


def test_nothing_found_leaves_the_phase_without_degraded() -> None:
    scraped = EngineScrape("team-a", PODS, frozenset(p.name for p in PODS), GRACE, at(60))
    assert (
        degraded_reason(decide_pass(seen(analyzing(SPEC), engine_scrape=scraped), at(60))) is None
    )


def test_settled_engines_without_series_are_degraded_metrics_unavailable() -> None:
    decision = decide_pass(seen(analyzing(SPEC), engine_scrape=unscraped(60)), at(60))
    assert degraded_reason(decision) == METRICS_UNAVAILABLE


def test_before_the_grace_the_scrape_check_says_nothing() -> None:
    decision = decide_pass(seen(analyzing(SPEC), engine_scrape=unscraped(20)), at(20))
    assert degraded_reason(decision) is None


def test_an_engine_on_another_vllm_release_is_degraded_version_mismatch() -> None:
    running = (RunningVersion("llama-candidate-1-b", "0.1.0"),)
    decision = decide_pass(seen(analyzing(SPEC), running_versions=running), at(60))
    assert degraded_reason(decision) == VERSION_MISMATCH


def test_foreign_children_take_precedence_over_metrics_unavailable() -> None:
    findings = FindingsRecord(not_owned_children=["Deployment llama-candidate is not ours"])
    old = analyzing(SPEC).model_copy(update={"apply_findings": findings})
    decision = decide_pass(seen(old, engine_scrape=unscraped(60)), at(60))
    assert degraded_reason(decision) == NOT_OWNED
    without = decide_pass(seen(analyzing(SPEC), engine_scrape=unscraped(60)), at(60))
    assert degraded_reason(without) == METRICS_UNAVAILABLE  # the scrape check did look
