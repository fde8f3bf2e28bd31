"""Offline evaluation of a ValidatingAdmissionPolicy's CEL, for unit tests.

cel-python (the library tests/unit/api/sdr_crd_checker.py evaluates CRD rules with) has no
notion of an admission policy, so this adapter does what the API server does around the
expressions: every matchCondition must hold or the request is not checked; variables are
evaluated in order into `variables`; each validation that is false refuses with its
messageExpression (else its message); an expression that errors refuses, as
failurePolicy Fail does. It is not the API server: CEL's type checking, cost limits and
the Kubernetes CEL extension libraries are not modelled, so the policy sticks to standard
CEL (has, exists, filter, map, startsWith, endsWith, in).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import celpy
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

CHART = Path(__file__).resolve().parents[3] / "charts" / "specdecode-operator"
HELM_CACHE = Path.home() / ".cache" / "specdecode" / "bin"


def find_helm() -> str | None:
    """The helm that `make binaries` built (cached outside the repo), else one on PATH."""
    built = sorted(HELM_CACHE.glob("*/helm"), key=lambda path: path.stat().st_mtime)
    return str(built[-1]) if built else shutil.which("helm")


def render_chart(helm: str, *values: str) -> list[dict[str, Any]]:
    """`helm template` of the chart with `values` (helm flags); its documents."""
    result = subprocess.run(
        [helm, "template", "t", str(CHART), "--namespace", "ops", *values],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@dataclass
class PolicyEvaluator:
    """Evaluates one rendered ValidatingAdmissionPolicy against admission requests."""

    policy: dict[str, Any]
    _programs: dict[str, Any] = field(default_factory=dict)

    def _run(self, expression: str, activation: dict[str, Any]) -> Any:
        if expression not in self._programs:
            environment = celpy.Environment()
            self._programs[expression] = environment.program(environment.compile(expression))
        result = self._programs[expression].evaluate(activation)
        if isinstance(result, CELEvalError):
            raise result
        return result

    def refusals(
        self, operation: str, obj: dict[str, Any], old: dict[str, Any] | None = None
    ) -> list[str]:
        """The messages the policy refuses the request with (empty: admitted)."""
        spec = self.policy["spec"]
        activation: dict[str, Any] = {
            "request": json_to_cel({"operation": operation}),
            "object": json_to_cel(obj),
            "oldObject": json_to_cel(old),
        }
        try:
            for condition in spec.get("matchConditions", []):
                if not bool(self._run(condition["expression"], activation)):
                    return []
            variables: dict[celtypes.StringType, Any] = {}
            for variable in spec.get("variables", []):
                activation["variables"] = celtypes.MapType(variables)
                value = self._run(variable["expression"], activation)
                variables[celtypes.StringType(variable["name"])] = value
            activation["variables"] = celtypes.MapType(variables)
            refused = []
            for validation in spec["validations"]:
                if bool(self._run(validation["expression"], activation)):
                    continue
                if "messageExpression" in validation:
                    refused.append(str(self._run(validation["messageExpression"], activation)))
                else:
                    refused.append(validation["message"])
        except CELEvalError as error:
            assert spec["failurePolicy"] == "Fail"
            return [f"expression error: {error}"]
        return refused
