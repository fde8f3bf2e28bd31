"""The drift guard's gauges: specdecode_drifted follows status.drift (what the
SpecDecodeDrifted alert reads), production's alpha follows each look, both go with the
rollout."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from specdecode.adapters.telemetry import OperatorMetrics
from specdecode.api.guard import DriftStatus
from specdecode.api.status import Phase, SpecDecodeRolloutStatus
from specdecode.domain.drift import DriftCheck, DriftVerdict

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LABELS = {"namespace": "serving", "rollout": "llama"}
DRIFT = DriftStatus(
    detected_at=T0,
    alpha=0.1,
    lower_bound=0.08,
    upper_bound=0.12,
    threshold=0.2,
    window_start=T0,
    window_seconds=300,
    blocks=10,
    draft_tokens=30000,
)


def test_drifted_gauge_follows_status_and_alpha_follows_looks() -> None:
    metrics = OperatorMetrics()
    promoted = SpecDecodeRolloutStatus(phase=Phase.PROMOTED)
    metrics.observe("serving", "llama", promoted, promoted)
    assert metrics.registry.get_sample_value("specdecode_drifted", LABELS) == 0.0
    drifted = promoted.model_copy(update={"drift": DRIFT})
    metrics.observe("serving", "llama", promoted, drifted)
    assert metrics.registry.get_sample_value("specdecode_drifted", LABELS) == 1.0
    rolled_back = drifted.model_copy(update={"phase": Phase.ROLLED_BACK})
    metrics.observe("serving", "llama", drifted, rolled_back)  # onDrift: Rollback acted
    assert metrics.registry.get_sample_value("specdecode_drifted", LABELS) == 0.0
    metrics.observe("serving", "llama", rolled_back, drifted)

    check = DriftCheck(DriftVerdict.DRIFTED, alpha=0.1, lower=0.08, upper=0.12, blocks=10)
    metrics.production_looked("serving", "llama", check, 0.2)
    value = metrics.registry.get_sample_value
    assert value("specdecode_production_alpha", {**LABELS, "bound": "upper"}) == 0.12
    assert value("specdecode_production_alpha", {**LABELS, "bound": "threshold"}) == 0.2
    metrics.production_looked("serving", "llama", DriftCheck(DriftVerdict.NONE), 0.2)  # no data
    assert value("specdecode_production_alpha", {**LABELS, "bound": "value"}) == 0.1

    metrics.forget("serving", "llama")
    assert value("specdecode_drifted", LABELS) is None
    assert value("specdecode_production_alpha", {**LABELS, "bound": "value"}) is None


def test_a_drift_under_reanalysis_stays_alerted_until_decided() -> None:
    metrics = OperatorMetrics()
    promoted = SpecDecodeRolloutStatus(phase=Phase.PROMOTED)
    reanalysing = promoted.model_copy(
        update={"phase": Phase.ANALYZING, "drift": DRIFT, "reanalysed": "413731e92d"}
    )
    metrics.observe("serving", "llama", promoted, reanalysing)
    assert metrics.registry.get_sample_value("specdecode_drifted", LABELS) == 1.0
    failed = reanalysing.model_copy(update={"phase": Phase.ROLLED_BACK})
    metrics.observe("serving", "llama", reanalysing, failed)  # decided: off, and said so
    assert metrics.registry.get_sample_value("specdecode_drifted", LABELS) == 0.0
