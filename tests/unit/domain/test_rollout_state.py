"""The boundary loses nothing: the wire's status and the domain's state hold the same fields.

`reconciler.observe.state_of` turns the stored status into the domain's `RolloutState`
once, `reconciler.status_boundary.status_of` turns the decided state back once (issue 35).
Round trip: rich statuses (every field of every part set, and the statuses the domain
itself reaches) come back equal, and dump to the same JSON the write path sends. Structure:
each wire class and its domain counterpart have the same field names, recursively, so a
field added to the wire without its domain counterpart fails here.
"""

from __future__ import annotations

import types
import typing
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from domain_fixtures import EAGLE3, NGRAM, make_spec, status_in
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from specdecode.api.acceptance_by_traffic import TrafficAcceptance
from specdecode.api.adoption import WorkloadStatus
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.status import (
    Condition,
    DriftStatus,
    GateLook,
    GateResult,
    LoadStatus,
    MirrorStatus,
    SpecDecodeRolloutStatus,
    StageStatus,
)
from specdecode.api.status_findings import ApplyFindings
from specdecode.domain.rollout_state import RolloutState
from specdecode.domain.speculative_setting import SpeculativeSetting
from specdecode.reconciler.observe import state_of
from specdecode.reconciler.status_boundary import status_of
from specdecode.vocabulary import (
    AcceptanceBasis,
    ConditionStatus,
    DriftKind,
    Evidence,
    GateType,
    GateVerdict,
    ItlDefinition,
    Phase,
    StagePhase,
)

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def _look(offset: int) -> GateLook:
    return GateLook(
        measured_at=T0 + timedelta(seconds=offset),
        measured_seconds=60.0 + offset,
        verdict=GateVerdict.INCONCLUSIVE,
        value=0.61,
        lower_bound=0.58,
        upper_bound=0.64,
        samples=4000,
        units=120,
        error=0.004,
    )


GATE = GateResult(
    name="p99",
    type=GateType.TAIL_LATENCY,
    verdict=GateVerdict.FAILED,
    reason="p99 ratio 1.31 > 1.2",
    value=1.31,
    lower_bound=1.22,
    upper_bound=1.4,
    threshold=1.2,
    samples=9000,
    baseline_value=0.021,
    candidate_value=0.027,
    server_baseline_value=0.02,
    server_candidate_value=0.026,
    units=40,
    mean_acceptance_length=2.4,
    stream_value=2.3,
    acceptance_per_position=[0.8, 0.6, 0.4],
    itl_definition=ItlDefinition.PER_TOKEN,
    close_call=True,
    dry_run=True,
    fail_only=True,
    failures=2,
    inconclusives=3,
    consecutive_errors=1,
    measured_at=T0 + timedelta(seconds=300),
    look_count=5,
    looks=[_look(0), _look(60)],
)
TRAFFIC = TrafficAcceptance(
    traffic_class="chat",
    temperature="greedy",
    output_length="short",
    requests=300,
    steps=9000,
    accepted_per_step=1.8,
    alpha=0.6,
    lower_bound=0.55,
    upper_bound=0.65,
    basis=AcceptanceBasis.ENGINE,
)
LOAD = LoadStatus(
    shards="2/2",
    requests=812,
    client_delay_p99_ms=0.4,
    notes=["candidate load incomplete: load pod p-1 did not answer"],
    outcomes=["baseline: 412 ok; 0 stalls", "candidate: 400 ok, 3 timeout; 3 stalls"],
    acceptance_by_traffic=[TRAFFIC, TRAFFIC.model_copy(update={"traffic_class": "other"})],
)
STAGE = StageStatus(
    name="canary",
    phase=StagePhase.FAILED,
    started_at=T0,
    measure_from=T0 + timedelta(seconds=30),
    finished_at=T0 + timedelta(seconds=330),
    message="p99 failed",
    inconclusive_runs=1,
    gates=[GATE, GATE.model_copy(update={"name": "alpha", "type": GateType.ACCEPTANCE})],
    load=LOAD,
    evidence=Evidence.CLIENT_SIDE_PAIRED,
)
RICH = SpecDecodeRolloutStatus(
    observed_generation=7,
    phase=Phase.ROLLED_BACK,
    reason="GateFailed",
    message="p99 failed at canary",
    stable_speculative=NGRAM,
    stable_fingerprint=NGRAM.fingerprint(),
    candidate_speculative=EAGLE3,
    candidate_fingerprint=EAGLE3.fingerprint(),
    phase_since=T0 + timedelta(seconds=330),
    analysis_started_at=T0,
    analysis_fingerprint="0123456789abcdef",
    evidence=["engine.image=abc", "prompts=def"],
    current_stage="canary",
    current_stage_index=0,
    stages=[STAGE, StageStatus(name="full")],
    verdict="RolledBack",
    alpha="0.61 [0.58, 0.64]",
    itl_ratio="1.31",
    previous_stable_speculative=EAGLE3,
    drift=DriftStatus(
        kind=DriftKind.LATENCY,
        detected_at=T0,
        alpha=0.4,
        lower_bound=0.02,
        upper_bound=0.05,
        threshold=0.01,
        window_start=T0 - timedelta(seconds=1800),
        window_seconds=1800.0,
        blocks=30,
        draft_tokens=90000,
        tail_share=0.03,
        edge_seconds=0.05,
        reference_seconds=0.04,
        observations=12000,
        message="production's tail past its line",
    ),
    schedule_offer=EAGLE3.model_copy(update={"num_speculative_tokens": 2}),
    analysed_for="fedcba9876543210",
    reanalysed="00112233",
    workload=WorkloadStatus(
        source="Deployment/vllm",
        image="vllm/vllm-openai:v0.24.0",
        model="meta-llama/Llama-3.1-8B-Instruct",
        served_model_name="llama",
        vllm_version="0.24.0",
        template_hash="abcd",
        dropped_labels=["app", "tier"],
        owner_patch='{"spec": {}}',
        verified_at=T0,
    ),
    mirror=MirrorStatus(splitter_service="r-splitter:8080", http_route="live"),
    apply_findings=ApplyFindings(
        not_owned_children=["Deployment ns/r-candidate"],
        not_owned_load_token="Secret ns/r-load-token is not ours",
        not_owned_promotion_files="ConfigMap ns/r-promotion is not ours",
        patch_refused="conflict with argocd",
        patch_refused_generation=3,
    ),
    conditions=[
        Condition(
            type="Degraded",
            status=ConditionStatus.TRUE,
            reason="ChildNotOwned",
            message="Deployment ns/r-candidate",
            last_transition_time=T0,
            observed_generation=7,
        )
    ],
)


def _unset_fields(model: BaseModel, path: str = "status") -> list[str]:
    """Fields of `model` (recursively) left at their default: the rich status sets all."""
    unset = []
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if not field.is_required() and value == field.get_default(call_default_factory=True):
            unset.append(f"{path}.{name}")
        items = value if isinstance(value, list) else [value]
        for item in items[:1]:
            if isinstance(item, BaseModel) and not isinstance(item, type(EAGLE3)):
                unset += _unset_fields(item, f"{path}.{name}")
    return unset


def test_the_rich_status_sets_every_field_of_every_part() -> None:
    """So the round trip below covers each field: a new one must be set here too."""
    assert _unset_fields(RICH.model_copy(update={"stages": [STAGE]})) == []


def _round_trips(status: SpecDecodeRolloutStatus) -> None:
    state = state_of(status)
    assert isinstance(state, RolloutState)
    back = status_of(state)
    assert back == status
    assert back.model_dump(mode="json", by_alias=True) == status.model_dump(
        mode="json", by_alias=True
    )


def test_a_rich_status_crosses_the_boundary_and_back_unchanged() -> None:
    _round_trips(RICH)
    _round_trips(SpecDecodeRolloutStatus())


@pytest.mark.parametrize("phase", [phase.value for phase in Phase if phase is not Phase.PENDING])
def test_the_statuses_the_domain_reaches_cross_back_unchanged(phase: str) -> None:
    state = status_in(make_spec(), phase)
    status = status_of(state)
    assert state_of(status) == state
    _round_trips(status)


@settings(max_examples=60, deadline=None)
@given(
    failures=st.integers(min_value=0, max_value=10**6),
    value=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    message=st.text(max_size=40),
    offset=st.integers(min_value=0, max_value=10**7),
    phase=st.sampled_from(Phase),
    verdict=st.sampled_from(GateVerdict),
)
def test_any_status_values_cross_back_unchanged(
    failures: int, value: float | None, message: str, offset: int, phase: Phase, verdict: Any
) -> None:
    gate = GATE.model_copy(update={"failures": failures, "value": value, "verdict": verdict})
    stage = STAGE.model_copy(
        update={"message": message, "gates": [gate], "started_at": T0 + timedelta(seconds=offset)}
    )
    _round_trips(RICH.model_copy(update={"phase": phase, "message": message, "stages": [stage]}))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation names (through `X | None` and `list[X]`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin in (list, typing.Union, types.UnionType):
        return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]
    return []


def _shape_differences(wire: type[BaseModel], domain: type[BaseModel], path: str) -> list[str]:
    """Where `domain` does not hold `wire`'s fields (recursively), one line each."""
    if (wire, domain) == (SpeculativeConfig, SpeculativeSetting):
        return []  # converted whole (`adapters.speculative_boundary`, its own round trip)
    wire_fields, domain_fields = wire.model_fields, domain.model_fields
    found = [f"{path}.{name}: missing" for name in wire_fields if name not in domain_fields]
    found += [
        f"{path}.{name}: not on the wire" for name in domain_fields if name not in wire_fields
    ]
    for name in wire_fields.keys() & domain_fields.keys():
        inner_wire = _models_in(wire_fields[name].annotation)
        inner_domain = _models_in(domain_fields[name].annotation)
        if len(inner_wire) != len(inner_domain):
            found.append(f"{path}.{name}: {inner_wire} against {inner_domain}")
            continue
        for one, other in zip(inner_wire, inner_domain, strict=True):
            found += _shape_differences(one, other, f"{path}.{name}")
    return found


def test_each_wire_class_has_its_domain_counterpart_field_for_field() -> None:
    assert _shape_differences(SpecDecodeRolloutStatus, RolloutState, "status") == []


def test_the_structure_check_sees_a_missing_field() -> None:
    """The control: a domain type without one of the wire's fields is reported."""
    lacking = typing.cast(
        type[BaseModel],
        type("Lacking", (BaseModel,), {"__annotations__": {"name": "str"}}),
    )
    assert _shape_differences(StageStatus, lacking, "stage")[:1] == ["stage.phase: missing"]
