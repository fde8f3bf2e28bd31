"""A gate type's modules are found from `GateType`, and a missing one fails at import.

Why: issue 35 asks that adding a gate touch few places. The enum is the registry: each
package with a module per type (`api.gate_kinds`, `domain.gates`) imports one module per
member (`vocabulary.import_gate_modules`), so no hand-kept import list remains. What is
left by hand is `GateSpec`'s base list (mypy rejects computed bases), which
`declaration.require_listed` holds to the enum. The toy gate below, added as its enum line,
its two modules and its base in a copy of the package, is picked up by both registries;
each check has its control (a module, a registration or a base taken away).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from specdecode.api import gate_kinds
from specdecode.api.gate_kinds import declaration
from specdecode.api.gate_kinds import speedup as speedup_kind
from specdecode.api.gate_spec import GateSpec
from specdecode.domain import gates
from specdecode.domain.gates import registry
from specdecode.vocabulary import GateType, gate_module_name, import_gate_modules

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[3] / "operator" / "specdecode"
TOY_PACKAGE = "toy_gate_modules"


@pytest.fixture
def toy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty package on sys.path, dropped from sys.modules afterwards."""
    root = tmp_path / TOY_PACKAGE
    root.mkdir()
    (root / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [m for m in sys.modules if m.split(".")[0] == TOY_PACKAGE]:
        del sys.modules[name]


def test_the_module_name_is_the_value_in_snake_case() -> None:
    assert [gate_module_name(t) for t in GateType] == [
        "acceptance",
        "accepted_length",
        "tail_latency",
        "speedup",
        "error_rate",
    ]


def test_both_packages_import_one_module_per_member() -> None:
    for package in (gate_kinds, gates):
        assert {t: m.__name__ for t, m in package.MODULES.items()} == {
            t: f"{package.__name__}.{gate_module_name(t)}" for t in GateType
        }


def test_a_member_without_its_module_fails_naming_the_file(toy_package: Path) -> None:
    for gate_type in GateType:
        if gate_type is not GateType.SPEEDUP:
            (toy_package / f"{gate_module_name(gate_type)}.py").write_text("")
    with pytest.raises(
        ModuleNotFoundError,
        match=re.escape(
            f"gate type Speedup has no module {TOY_PACKAGE}.speedup: write {TOY_PACKAGE}/speedup.py"
        ),
    ):
        import_gate_modules(TOY_PACKAGE)
    # The control: with the module written, every member is found.
    (toy_package / "speedup.py").write_text("")
    assert list(import_gate_modules(TOY_PACKAGE)) == list(GateType)


def test_an_import_failing_inside_a_module_is_not_reworded(toy_package: Path) -> None:
    """A module that exists but imports something missing is not "a module to write"."""
    for gate_type in GateType:
        (toy_package / f"{gate_module_name(gate_type)}.py").write_text("")
    (toy_package / "speedup.py").write_text("import toy_gate_no_such_dependency\n")
    with pytest.raises(ModuleNotFoundError, match="'toy_gate_no_such_dependency'"):
        import_gate_modules(TOY_PACKAGE)


def test_a_module_registering_no_measure_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert registry.require_registered(gates.MODULES) is gates.MODULES  # the control
    others = {t: m for t, m in registry._REGISTRY.items() if t is not GateType.SPEEDUP}
    monkeypatch.setattr(registry, "_REGISTRY", others)
    with pytest.raises(
        LookupError, match=re.escape("gates.speedup registers no measure for Speedup")
    ):
        registry.require_registered(gates.MODULES)


def test_fields_left_out_of_gatespec_bases_are_refused_naming_the_fix() -> None:
    assert declaration.require_listed(GateSpec, gate_kinds.MODULES) is GateSpec  # the control

    bases = tuple(b for b in GateSpec.__bases__ if b is not speedup_kind.SpeedupFields)
    partial = type("Partial", bases, {})  # GateSpec without the Speedup fields
    left_out = "Partial's bases leave out speedup.SpeedupFields: list each first"
    with pytest.raises(TypeError, match=re.escape(left_out)):
        declaration.require_listed(partial, gate_kinds.MODULES)


_TOY_KIND = '''"""A toy gate type's wire declaration."""

from __future__ import annotations

from specdecode.api.base import KubeModel
from specdecode.api.gate_kinds.declaration import REQUESTS, Evidence, GateKind, declare
from specdecode.vocabulary import GateType, TrafficSourceType

KIND = declare(
    GateKind(
        GateType.TOY_FIGURE,
        {"max_toy": 1.0},
        10,
        REQUESTS,
        {source: Evidence("nothing", "-") for source in TrafficSourceType},
    )
)


class ToyFigureFields(KubeModel):
    """The toy gate's fields on `GateSpec`."""

    max_toy: float | None = KIND.field("max_toy", "a toy limit.")
'''

_TOY_MEASURE = '''"""A toy gate type's measure."""

from __future__ import annotations

from specdecode.domain.gate_measures import Measurement
from specdecode.domain.gates.registry import GateMeasure, Need, register
from specdecode.vocabulary import GateType, GateVerdict


@register(GateType.TOY_FIGURE)
class ToyFigureGate(GateMeasure):
    """Never decides."""

    higher_is_better = False
    statistic = "a toy figure"
    judged_against = ("max_toy",)

    def needs(self, gate):
        return frozenset({Need.REQUEST_OUTCOMES})

    def measure(self, gate, seen, look):
        return Measurement(GateVerdict.INCONCLUSIVE, "toy")
'''

_CHECK = """
from pydantic import ValidationError

from specdecode.api.evidence_table import EVIDENCE
from specdecode.api.gate_spec import GATE_KINDS, GateSpec, GateType
from specdecode.domain.gates import measure_for
from specdecode.vocabulary import TrafficSourceType

toy = GateType("ToyFigure")
assert GATE_KINDS[toy].settings == {"max_toy": 1.0}
assert all((toy, source) in EVIDENCE for source in TrafficSourceType)
assert GateSpec(name="t", type=toy, max_toy=0.5).setting("max_toy") == 0.5
try:
    GateSpec(name="t", type="Speedup", max_toy=0.5)
except ValidationError as refused:
    assert "maxToy applies only to type ToyFigure" in str(refused)
else:
    raise AssertionError("maxToy admitted on Speedup")
assert type(measure_for(toy)).__name__ == "ToyFigureGate"
print("found by both registries")
"""


def _edit(path: Path, anchor: str, replacement: str) -> None:
    text = path.read_text()
    assert anchor in text, f"{path}: {anchor!r} not found (the toy's edit needs updating)"
    path.write_text(text.replace(anchor, replacement, 1))


def _run_check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHECK],
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )


def test_a_toy_gate_is_its_enum_line_two_modules_and_its_base(tmp_path: Path) -> None:
    """In a copy of the package: the enum line, `api/gate_kinds/toy_figure.py`,
    `domain/gates/toy_figure.py` and the base (with its import) in `api/gate_spec.py` are the
    whole change; then the controls take the domain module and the base away."""
    copy = tmp_path / "specdecode"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    _edit(
        copy / "vocabulary.py",
        '    ERROR_RATE = "ErrorRate"\n',
        '    ERROR_RATE = "ErrorRate"\n    TOY_FIGURE = "ToyFigure"\n',
    )
    (copy / "api" / "gate_kinds" / "toy_figure.py").write_text(_TOY_KIND)
    measure = copy / "domain" / "gates" / "toy_figure.py"
    measure.write_text(_TOY_MEASURE)
    spec = copy / "api" / "gate_spec.py"
    _edit(spec, "    tail_latency,\n)", "    tail_latency,\n    toy_figure,\n)")
    listed = spec.read_text()
    _edit(spec, "class GateSpec(\n", "class GateSpec(\n    toy_figure.ToyFigureFields,\n")
    found = _run_check(tmp_path)
    assert found.returncode == 0, found.stderr
    assert found.stdout == "found by both registries\n"

    measure.unlink()
    no_measure = _run_check(tmp_path)
    assert "gate type ToyFigure has no module specdecode.domain.gates.toy_figure: write " in (
        no_measure.stderr
    )
    measure.write_text(_TOY_MEASURE)
    spec.write_text(listed)
    no_base = _run_check(tmp_path)
    assert "GateSpec's bases leave out toy_figure.ToyFigureFields: list each first" in (
        no_base.stderr
    )
