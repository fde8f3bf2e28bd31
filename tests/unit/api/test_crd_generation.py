"""The generated CRD: committed copies match the models, the schema is structural and
self-describing, its defaults agree with the models', and every CEL rule compiles."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from sdr_crd_checker import CrdChecker, apply_defaults

from localcluster.manifests import REPO as REPO_ROOT
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.api.schema import walk
from specdecode.tools.crdgen import custom_resource_definition, main, output_paths

pytestmark = pytest.mark.unit

MINIMAL_SPEC: dict[str, Any] = {
    "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
    "engine": {"image": "vllm/vllm-openai:v0.11.2"},
}


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return custom_resource_definition()


@pytest.fixture(scope="module")
def root_schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def all_nodes(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    nodes: list[tuple[str, dict[str, Any]]] = []
    walk(schema, lambda path, node: nodes.append((path, node)))
    return nodes


def test_committed_crds_match_the_models() -> None:
    assert main(["--check"]) == 0
    first, chart_copy = output_paths(REPO_ROOT)
    assert first.read_text() == chart_copy.read_text()


def test_check_reports_drift_with_a_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--write", "--repo-root", str(tmp_path)]) == 0
    assert main(["--check", "--repo-root", str(tmp_path)]) == 0
    _, chart_copy = output_paths(tmp_path)
    chart_copy.write_text(
        chart_copy.read_text().replace("shortNames:\n    - sdr", "shortNames: []")
    )
    capsys.readouterr()
    assert main(["--check", "--repo-root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "-    shortNames: []" in out and "+    - sdr" in out


def test_identity_columns_and_subresources(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "specdecoderollouts.specdecode.io"
    assert spec["scope"] == "Namespaced"
    assert spec["names"]["shortNames"] == ["sdr"]
    assert spec["names"]["categories"] == ["specdecode"]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["Phase"] == ".status.phase"
    assert columns["ITL-Ratio"] == ".status.itlRatio"
    assert list(columns)[-1] == "Age"
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    for path in columns.values():
        if path.startswith(".status."):
            *parents, leaf = path.removeprefix(".status.").split(".")
            node = status
            for parent in parents:
                node = node[parent]["properties"]
            assert leaf in node


def test_schema_is_structural(root_schema: dict[str, Any]) -> None:
    for path, node in all_nodes(root_schema):
        assert "type" in node, path
        assert not {"$ref", "$defs", "anyOf", "oneOf", "allOf", "title", "nullable"} & set(node)
        assert node.get("additionalProperties") is not False, path
        assert not ("properties" in node and "additionalProperties" in node), path
        if node["type"] == "array":
            assert "items" in node, path


def test_every_field_is_described(root_schema: dict[str, Any]) -> None:
    undocumented = []
    for path, node in all_nodes(root_schema):
        for name, child in node.get("properties", {}).items():
            if f"{path}.{name}" != ".metadata" and not child.get("description"):
                undocumented.append(f"{path}.{name}")
    assert undocumented == []


def test_defaults_are_valid_and_status_has_none(root_schema: dict[str, Any]) -> None:
    defaulted = 0
    for path, node in all_nodes(root_schema):
        if "default" in node:
            defaulted += 1
            assert not path.startswith(".status"), path
            node_without_default = {k: v for k, v in node.items() if k != "default"}
            errors = CrdChecker(node_without_default).errors(node["default"])
            assert errors == [], (path, errors)
    assert defaulted > 20


def test_api_server_defaults_equal_model_defaults(root_schema: dict[str, Any]) -> None:
    spec_schema = root_schema["properties"]["spec"]
    defaulted = apply_defaults(spec_schema, copy.deepcopy(MINIMAL_SPEC))
    assert defaulted["analysis"]["stages"][0]["name"] == "acceptance"
    from_server = SpecDecodeRolloutSpec.model_validate(defaulted)
    assert from_server == SpecDecodeRolloutSpec.model_validate(MINIMAL_SPEC)


def test_every_cel_rule_compiles_and_has_a_message(root_schema: dict[str, Any]) -> None:
    rules = [
        r for _, node in all_nodes(root_schema) for r in node.get("x-kubernetes-validations", [])
    ]
    assert len(rules) >= 20
    environment = celpy.Environment()
    for rule in rules:
        environment.compile(rule["rule"])
        assert rule["message"]
        assert rule.get("reason", "FieldValueInvalid") in {
            "FieldValueInvalid",
            "FieldValueForbidden",
            "FieldValueRequired",
            "FieldValueDuplicate",
        }


def test_status_has_no_rules(root_schema: dict[str, Any]) -> None:
    status = root_schema["properties"]["status"]
    assert not any("x-kubernetes-validations" in node for _, node in all_nodes(status))


def test_what_rules_iterate_is_bounded(root_schema: dict[str, Any]) -> None:
    """The API server estimates CEL cost from maxItems/maxLength; unbounded is refused."""
    spec = root_schema["properties"]["spec"]
    extra_args = spec["properties"]["model"]["properties"]["extraArgs"]
    assert extra_args["maxItems"] <= 64 and extra_args["items"]["maxLength"] <= 1024
    stages = spec["properties"]["analysis"]["properties"]["stages"]
    assert stages["maxItems"] <= 16 and stages["items"]["properties"]["gates"]["maxItems"] <= 16
    for path, node in all_nodes(spec):
        if "enum" in node:
            assert node["maxLength"] == max(len(v) for v in node["enum"]), path


def test_committed_file_is_the_generated_object() -> None:
    committed = yaml.safe_load(output_paths(REPO_ROOT)[0].read_text())
    assert committed == custom_resource_definition()
