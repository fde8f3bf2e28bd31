"""A gate type is named in its own module, the registry and the API, nowhere else.

Why: what a gate is (its settings, what it reads, how it judges) lives in its module under
`domain/gates/` (the registry's Protocol) and its wire row in `api/gate_spec.GATE_KINDS`;
the shared path (`gate_boundary`, `analyzing`, `close_call`, ...) asks the registry. A
branch on one member (`gate.type is GateType.TAIL_LATENCY`, a table keyed by members, a
comparison with the type's wire name) elsewhere is a second place a new gate must be added
to and an old one can be forgotten in. The AST is read, so comments and docstrings that
name a type do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from specdecode.api.evidence_table import EVIDENCE
from specdecode.api.gate_spec import GATE_KINDS
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


def test_outside_the_api_a_gate_type_is_named_only_by_the_module_that_registers_it() -> None:
    """The places a new gate touches, as CONTRIBUTING's "Adding a gate type" lists them:
    outside the wire (`vocabulary.GateType`, its `api.gate_spec.GATE_KINDS` row, its
    `api.evidence_table.EVIDENCE` rows, each required below) only its own gate module names
    it; the registry, the boundary, status, metrics, the guard and the tuning ask that
    module's measure (the next test's companion in domain/test_a_gate_in_its_module.py)."""
    named: dict[str, set[str]] = {member.name: set() for member in GateType}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if not name.startswith(("api/", "vocabulary.py")):
            for member in members_named(path.read_text()):
                named[member].add(name)
    assert named == {member.name: {_registering_module(member)} for member in GateType}


@pytest.mark.parametrize("gate_type", list(GateType))
def test_each_gate_type_has_its_wire_rows(gate_type: GateType) -> None:
    """The wire side a new gate must add: a GATE_KINDS row and an EVIDENCE row per source."""
    assert gate_type in GATE_KINDS
    assert all((gate_type, source) in EVIDENCE for source in TrafficSourceType)


def test_the_check_sees_a_member_named_in_a_second_module() -> None:
    """The control: a shared module that names a member is seen."""
    assert members_named("kind = GateType.SPEEDUP\nother = GateType.ERROR_RATE\n") == {
        "SPEEDUP",
        "ERROR_RATE",
    }
