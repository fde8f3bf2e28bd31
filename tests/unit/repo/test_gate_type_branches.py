"""A gate type is named in its own two modules, the registry and the API, nowhere else.

Why: what a gate is lives in its module under `domain/gates/` (what it reads, how it
judges: the registry's Protocol) and its wire declaration under `api/gate_kinds/` (its
fields, defaults and evidence rows, listed once among `GateSpec`'s bases); the shared
path (`gate_boundary`, `analyzing`, `close_call`, ...) asks the registry. A
branch on one member (`gate.type is GateType.TAIL_LATENCY`, a table keyed by members, a
comparison with the type's wire name) elsewhere is a second place a new gate must be added
to and an old one can be forgotten in. The AST is read, so comments and docstrings that
name a type do not count.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from specdecode.api.evidence_table import EVIDENCE
from specdecode.api.gate_kinds import declaration
from specdecode.api.gate_spec import GATE_KINDS, GateSpec
from specdecode.api.traffic import TrafficSourceType
from specdecode.domain.gates import measure_for
from specdecode.vocabulary import GateType

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[3] / "operator" / "specdecode"
# Where a gate type may be named by member: the gates and their registry, the wire.
ALLOWED = ("domain/gates/", "api/", "vocabulary.py")
_WIRE_NAMES = frozenset(gate_type.value for gate_type in GateType)


def members_named(source: str) -> set[str]:
    """The GateType members a module names (`GateType.X`)."""
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "GateType"
        and node.attr.isupper()
    }


def type_branches(source: str) -> list[int]:
    """Lines naming a gate type by member (`GateType.X`) or comparing with its wire name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "GateType"
            and node.attr.isupper()
        ):
            found.append(node.lineno)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value in _WIRE_NAMES for o in operands):
                found.append(node.lineno)
    return sorted(found)


def _offenders() -> dict[str, list[int]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith(ALLOWED):
            continue
        if lines := type_branches(path.read_text()):
            found[name] = lines
    return found


def test_no_gate_type_branch_outside_the_gates_the_registry_and_the_api() -> None:
    offenders = _offenders()
    assert not offenders, f"per-type branches outside domain/gates and api (lines): {offenders}"


@pytest.mark.parametrize(
    "source",
    [
        "if gate.type is GateType.TAIL_LATENCY:\n    pass\n",
        "LIMITS = {GateType.SPEEDUP: True}\n",
        "ok = gate.type == 'ErrorRate'\n",
        "ok = gate.type in {GateType.ACCEPTANCE}\n",
    ],
)
def test_the_check_catches_a_branch(source: str) -> None:
    """The control: each shape of a per-type branch is found."""
    assert type_branches(source) == [1]


def test_the_check_ignores_generic_code_and_words() -> None:
    source = (
        '"""TailLatency and ErrorRate gates, by GateType.TAIL_LATENCY in prose."""\n'
        "kind = GATE_KINDS[gate.type]\n"
        "for gate_type in GateType:\n    pass\n"
    )
    assert type_branches(source) == []


def _registering_module(gate_type: GateType) -> str:
    module = type(measure_for(gate_type)).__module__
    return module.removeprefix("specdecode.").replace(".", "/") + ".py"


def _declaring_modules() -> dict[GateType, list[str]]:
    """The declaration modules among GateSpec's bases (the wire registry), by their type."""
    found: dict[GateType, list[str]] = {}
    for base in GateSpec.__mro__:
        if base.__module__.startswith("specdecode.api.gate_kinds."):
            module = importlib.import_module(base.__module__)
            kind = module.KIND
            assert kind is GATE_KINDS[kind.type]
            name = base.__module__.removeprefix("specdecode.").replace(".", "/") + ".py"
            found.setdefault(kind.type, []).append(name)
    return found


def test_a_gate_type_is_named_only_by_its_two_modules() -> None:
    """The places a new gate touches, as CONTRIBUTING's "Adding a gate type" lists them:
    besides its `vocabulary.GateType` value (the registry both packages find its modules
    from) and `GateSpec`'s bases (which name modules, not members), only its wire
    declaration (`api/gate_kinds/<type>.py`) and its gate module (`domain/gates/<type>.py`)
    name it; `GATE_KINDS`, `EVIDENCE`, the registry, the boundary, status, metrics, the
    guard and the tuning derive from them or ask the measure (the companion test is
    domain/test_a_gate_in_its_module.py). Elsewhere in `api/` the default stages and a few
    CEL rules still name a type (`ALLOWED`)."""
    declaring = _declaring_modules()
    named: dict[str, set[str]] = {member.name: set() for member in GateType}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name == "vocabulary.py" or (name.startswith("api/") and "/gate_kinds/" not in name):
            continue
        for member in members_named(path.read_text()):
            named[member].add(name)
    assert named == {
        member.name: {*declaring.get(member, []), _registering_module(member)}
        for member in GateType
    }


def test_the_wire_registry_derives_and_names_no_type() -> None:
    """GATE_KINDS and EVIDENCE are gathered from the declarations, never written per type."""
    for module in ("api/gate_spec.py", "api/evidence_table.py"):
        assert type_branches((PACKAGE / module).read_text()) == [], module


@pytest.mark.parametrize("gate_type", list(GateType))
def test_each_gate_type_has_its_wire_declaration(gate_type: GateType) -> None:
    """The wire side a new gate must add: one declaration among GateSpec's bases, whose row
    is its GATE_KINDS row, with an EVIDENCE row per traffic source."""
    assert len(_declaring_modules()[gate_type]) == 1
    assert set(GATE_KINDS[gate_type].settings) <= set(GateSpec.model_fields)
    assert all((gate_type, source) in EVIDENCE for source in TrafficSourceType)


def test_a_type_without_a_declaration_or_an_evidence_row_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The control: `declared` fails on a type whose module declares nothing, and on a
    declaration leaving a traffic source out."""
    complete = dict(declaration._DECLARED)
    monkeypatch.setattr(declaration, "_DECLARED", complete)
    assert list(declaration.declared()) == list(GateType)
    del complete[GateType.SPEEDUP]
    with pytest.raises(LookupError, match="Speedup"):
        declaration.declared()
    kind = GATE_KINDS[GateType.SPEEDUP]
    partial = {TrafficSourceType.PROMPTS: kind.evidence[TrafficSourceType.PROMPTS]}
    declaration.declare(
        declaration.GateKind(kind.type, kind.settings, kind.min_samples, kind.unit, partial)
    )
    with pytest.raises(LookupError, match="Speedup: no evidence row for \\['Mirror'\\]"):
        declaration.declared()


def test_the_check_sees_a_member_named_in_a_second_module() -> None:
    """The control: a shared module that names a member is seen."""
    assert members_named("kind = GateType.SPEEDUP\nother = GateType.ERROR_RATE\n") == {
        "SPEEDUP",
        "ERROR_RATE",
    }
