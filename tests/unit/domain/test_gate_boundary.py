"""The one place GateSpec becomes GateParams and a Measurement becomes a GateResult.

The gates read `GateParams`, not the wire model: these check that the conversion is by
name from the one field table each side has, applies GateSpec's own defaults, and drops
nothing a measure found on its way into status.
"""

from __future__ import annotations

from dataclasses import fields

import pytest
from gate_looks import pending_result

from specdecode.adapters.gate_boundary import gate_params
from specdecode.api import GateSpec, GateType, ItlDefinition
from specdecode.api.certify import StageContext, certify
from specdecode.api.gate_spec import GATE_KINDS, MIN_SAMPLES_DEFAULTS
from specdecode.api.speculative import SpeculativeMethod
from specdecode.api.status import GateResult
from specdecode.api.traffic import TrafficSourceType
from specdecode.domain.gate_measures import Measurement
from specdecode.domain.gate_params import GateParams

pytestmark = pytest.mark.unit

DERIVED = {"default_min_samples", "settings"}


def test_every_param_is_a_gate_spec_field_by_name() -> None:
    """One field table: a parameter is GateSpec's field of that name, or said to be derived;
    a type's own settings are its GATE_KINDS row, GateSpec fields too."""
    names = {field.name for field in fields(GateParams)}
    assert names - DERIVED <= set(GateSpec.model_fields)
    for kind in GATE_KINDS.values():
        assert set(kind.settings) <= set(GateSpec.model_fields) - names


@pytest.mark.parametrize("gate_type", list(GateType))
def test_defaults_are_the_specs_own(gate_type: GateType) -> None:
    """Every type-specific setting the type may set reaches its measure, and only those."""
    spec = GateSpec(name="g", type=gate_type)
    params = gate_params(spec)
    assert [name for name, _ in params.settings] == list(GATE_KINDS[gate_type].settings)
    for name in GATE_KINDS[gate_type].settings:
        assert params.setting(name) == spec.setting(name), name
    assert params.min_samples is None
    assert params.effective_min_samples == MIN_SAMPLES_DEFAULTS[gate_type]
    assert (params.name, params.type, params.confidence) == ("g", gate_type, 0.95)


def test_set_values_win_and_numbers_are_floats() -> None:
    spec = GateSpec(
        name="tail",
        type=GateType.TAIL_LATENCY,
        tolerance=1,
        itl_definition=ItlDefinition.PER_TOKEN,
        min_samples=7,
        dry_run=True,
    )
    params = gate_params(spec)
    assert params.number("tolerance") == 1.0 and isinstance(params.setting("tolerance"), float)
    assert params.choice("itl_definition", ItlDefinition) is ItlDefinition.PER_TOKEN
    with pytest.raises(KeyError):  # another type's setting is not this gate's
        params.setting("min_alpha")
    assert (params.min_samples, params.effective_min_samples, params.dry_run) == (7, 7, True)


@pytest.mark.parametrize(
    "methods", [None, ["eagle3"], ["none"], ["ngram", "suffix"], ["none", "eagle"]]
)
def test_methods_apply_as_the_spec_says(methods: list[str] | None) -> None:
    spec = GateSpec.model_validate({"name": "g", "type": "Acceptance", "methods": methods})
    for method in [None, *SpeculativeMethod]:
        judged = certify(spec, StageContext(TrafficSourceType.PROMPTS, method)).judged
        assert judged == (not methods or (method or "none") in methods), method


def test_a_measurement_reaches_status_whole() -> None:
    """Every field a measure fills has a place in GateResult (copied by name, none lost)."""
    assert {field.name for field in fields(Measurement)} <= set(GateResult.model_fields)


def test_only_a_tail_gate_shows_its_itl_definition() -> None:
    tail = pending_result(GateSpec(name="t", type=GateType.TAIL_LATENCY))
    alpha = pending_result(GateSpec(name="a", type=GateType.ACCEPTANCE, dry_run=True))
    assert tail.itl_definition is ItlDefinition.PER_CHUNK
    assert alpha.itl_definition is None and alpha.dry_run and alpha.reason == "not evaluated yet"
