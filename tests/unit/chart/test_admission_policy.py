"""The chart's admission policy: off by default; on, it refuses an engine or load image
outside admissionPolicy.allowedImages and a Secret reference outside allowedSecrets,
naming the field and value, and admits what the lists allow. The policy's CEL is rendered
by helm and evaluated with cel-python (admission_policy_cel.py); the API server's own
enforcement is covered by no unit test."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from admission_policy_cel import PolicyEvaluator, find_helm, render_chart

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
HELM = find_helm()
needs_helm = pytest.mark.skipif(HELM is None, reason="no helm: run `make binaries`")

ALLOWED_IMAGES = ["vllm/vllm-openai", "registry.example.com/ml/", "ghcr.io/x/load:v1"]
ALLOWED_SECRETS = ["hf-token", "prompts"]


def policy_documents(*values: str) -> list[dict[str, Any]]:
    assert HELM is not None
    return [
        doc
        for doc in render_chart(HELM, *values)
        if doc["kind"].startswith("ValidatingAdmissionPolicy")
    ]


@pytest.fixture(scope="module")
def evaluator() -> PolicyEvaluator:
    docs = policy_documents(
        "--set",
        "admissionPolicy.enabled=true",
        "--set-json",
        f"admissionPolicy.allowedImages={json.dumps(ALLOWED_IMAGES)}",
        "--set-json",
        f"admissionPolicy.allowedSecrets={json.dumps(ALLOWED_SECRETS)}",
    )
    (policy,) = [doc for doc in docs if doc["kind"] == "ValidatingAdmissionPolicy"]
    return PolicyEvaluator(policy)


def rollout(**engine: Any) -> dict[str, Any]:
    """The example rollout (engine image vllm/vllm-openai:..., hub token hf-token)."""
    obj: dict[str, Any] = yaml.safe_load(
        (REPO / "examples" / "specdecode-rollout.yaml").read_text()
    )
    obj["spec"]["engine"].update(engine)
    return obj


def tuning(traffic: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "specdecode.io/v1alpha1",
        "kind": "SpecDecodeTuning",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": {"engine": {"image": "vllm/vllm-openai:v0.33.0"}, "traffic": traffic},
    }


@needs_helm
def test_off_by_default_and_on_renders_a_bound_policy() -> None:
    assert policy_documents() == []
    docs = policy_documents("--set", "admissionPolicy.enabled=true")
    kinds = {doc["kind"]: doc for doc in docs}
    assert set(kinds) == {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    policy, binding = kinds["ValidatingAdmissionPolicy"], kinds["ValidatingAdmissionPolicyBinding"]
    assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert policy["spec"]["failurePolicy"] == "Fail"
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rule["apiGroups"] == ["specdecode.io"]
    assert set(rule["resources"]) == {"specdecoderollouts", "specdecodetunings"}
    assert set(rule["operations"]) == {"CREATE", "UPDATE"}


@needs_helm
def test_empty_lists_restrict_nothing() -> None:
    (policy,) = [
        doc
        for doc in policy_documents("--set", "admissionPolicy.enabled=true")
        if doc["kind"] == "ValidatingAdmissionPolicy"
    ]
    obj = rollout(image="evil.example.com/miner:1", hubTokenSecretRef={"name": "anything"})
    assert PolicyEvaluator(policy).refusals("CREATE", obj) == []


@needs_helm
def test_allowed_images_and_secrets_pass(evaluator: PolicyEvaluator) -> None:
    assert evaluator.refusals("CREATE", rollout()) == []
    digest = "vllm/vllm-openai@sha256:" + "a" * 64
    env = [
        {"name": "A", "value": "x"},
        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "prompts", "key": "k"}}},
    ]
    assert evaluator.refusals("CREATE", rollout(image=digest, env=env)) == []
    assert evaluator.refusals("CREATE", rollout(image="registry.example.com/ml/v:2")) == []
    traffic = {"secretRef": {"name": "prompts", "key": "p"}, "loadGenerator": {}}
    traffic["loadGenerator"]["image"] = "ghcr.io/x/load:v1"
    assert evaluator.refusals("CREATE", tuning(traffic)) == []


@needs_helm
@pytest.mark.parametrize(
    ("image", "field"),
    [
        ("evil.example.com/miner:1", "spec.engine.image"),
        ("vllm/vllm-openai-dev:v0.33.0", "spec.engine.image"),
        ("registry.example.com/mlx/v:2", "spec.engine.image"),
    ],
)
def test_an_image_outside_the_list_is_refused_by_name(
    evaluator: PolicyEvaluator, image: str, field: str
) -> None:
    assert evaluator.refusals("CREATE", rollout(image=image)) == [
        f'{field}: image "{image}" is not in the chart\'s admissionPolicy.allowedImages'
    ]


@needs_helm
def test_load_images_are_checked_in_both_kinds(evaluator: PolicyEvaluator) -> None:
    obj = rollout()
    obj["spec"]["analysis"]["traffic"] = {"loadGenerator": {"image": "ghcr.io/x/load:v2"}}
    assert evaluator.refusals("UPDATE", obj, rollout()) == [
        'spec.analysis.traffic.loadGenerator.image: image "ghcr.io/x/load:v2" is not in '
        "the chart's admissionPolicy.allowedImages"
    ]
    refused = evaluator.refusals("CREATE", tuning({"loadGenerator": {"image": "busybox"}}))
    assert refused == [
        'spec.traffic.loadGenerator.image: image "busybox" is not in '
        "the chart's admissionPolicy.allowedImages"
    ]


@needs_helm
@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            {"hubTokenSecretRef": {"name": "db-password", "key": "t"}},
            "spec.engine.hubTokenSecretRef.name",
        ),
        (
            {
                "env": [
                    {
                        "name": "PW",
                        "valueFrom": {"secretKeyRef": {"name": "db-password", "key": "p"}},
                    }
                ]
            },
            "spec.engine.env[PW].valueFrom.secretKeyRef.name",
        ),
    ],
)
def test_a_secret_outside_the_list_is_refused_by_name(
    evaluator: PolicyEvaluator, change: dict[str, Any], field: str
) -> None:
    assert evaluator.refusals("CREATE", rollout(**change)) == [
        f'{field}: Secret "db-password" is not in the chart\'s admissionPolicy.allowedSecrets'
    ]


@needs_helm
def test_prompt_secrets_are_checked(evaluator: PolicyEvaluator) -> None:
    obj = rollout()
    obj["spec"]["analysis"].setdefault("traffic", {})["secretRef"] = {"name": "other", "key": "k"}
    assert evaluator.refusals("CREATE", obj) == [
        'spec.analysis.traffic.secretRef.name: Secret "other" is not in the chart\'s '
        "admissionPolicy.allowedSecrets"
    ]
    assert evaluator.refusals("CREATE", tuning({"secretRef": {"name": "other", "key": "k"}})) == [
        'spec.traffic.secretRef.name: Secret "other" is not in the chart\'s '
        "admissionPolicy.allowedSecrets"
    ]


@needs_helm
def test_an_image_and_a_secret_both_refused(evaluator: PolicyEvaluator) -> None:
    obj = rollout(image="busybox", hubTokenSecretRef={"name": "x", "key": "t"})
    assert len(evaluator.refusals("CREATE", obj)) == 2


@needs_helm
def test_metadata_updates_of_an_old_object_pass(evaluator: PolicyEvaluator) -> None:
    """An object admitted before the policy keeps taking finalizer and annotation updates."""
    old = rollout(image="busybox")
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    assert evaluator.refusals("UPDATE", new, old) == []
    new["spec"]["engine"]["port"] = 8001
    assert evaluator.refusals("UPDATE", new, old) != []


def _named_fields(schema: dict[str, Any], path: str = "") -> set[str]:
    found = set()
    for name, child in schema.get("properties", {}).items():
        here = f"{path}.{name}"
        lowered = name.lower()
        if lowered == "env" or lowered.endswith("image") or "secret" in lowered:
            found.add(here)
        found |= _named_fields(child, here)
    if isinstance(schema.get("items"), dict):
        found |= _named_fields(schema["items"], path + "[]")
    return found


@pytest.mark.parametrize(
    ("crd", "expected"),
    [
        (
            "specdecode.io_specdecoderollouts.yaml",
            {
                ".spec.engine.image",
                ".spec.engine.env",
                ".spec.engine.hubTokenSecretRef",
                ".spec.analysis.traffic.secretRef",
                ".spec.analysis.traffic.loadGenerator.image",
            },
        ),
        (
            "specdecode.io_specdecodetunings.yaml",
            {
                ".spec.engine.image",
                ".spec.engine.env",
                ".spec.engine.hubTokenSecretRef",
                ".spec.traffic.secretRef",
                ".spec.traffic.loadGenerator.image",
            },
        ),
    ],
)
def test_the_policy_knows_every_image_and_secret_field(crd: str, expected: set[str]) -> None:
    """A new image or Secret field in the API must be added to the policy (and here)."""
    schema = yaml.safe_load((REPO / "crds" / crd).read_text())["spec"]["versions"][0]
    spec = schema["schema"]["openAPIV3Schema"]["properties"]["spec"]  # status: the operator's
    found = _named_fields(spec, ".spec")
    assert {f for f in found if not f.endswith("imagePullPolicy")} == expected


@needs_helm
def test_an_adopting_rollout_must_name_its_image_while_a_list_is_set(
    evaluator: PolicyEvaluator,
) -> None:
    """The four-line adoption names no image: the shadows would run whatever the source
    runs, unchecked by the list (a review found it). Named, it is checked like any image."""
    adopting = rollout()
    adopting["spec"]["workloadRef"] = {"name": "chat"}
    assert evaluator.refusals("CREATE", adopting) == []
    del adopting["spec"]["engine"]
    (refusal,) = evaluator.refusals("CREATE", adopting)
    assert refusal.startswith("spec.engine.image: with the chart's admissionPolicy.allowedImages")
    adopting["spec"]["engine"] = {"image": "evil.example.com/miner:1"}
    assert evaluator.refusals("CREATE", adopting) == [
        'spec.engine.image: image "evil.example.com/miner:1" is not in the chart\'s '
        "admissionPolicy.allowedImages"
    ]
