"""What the rendered children must say, independent of layout: the snapshots pin the
layout, these pin the rules (one speculative flag, GPUs in limits, owners, selectors...)."""

from __future__ import annotations

import json
from typing import Any

import jinja2
import pytest
from render_cases import UID, example_spec

from specdecode.adapters.engine_pod import startup_probe_timing
from specdecode.adapters.render import (
    CONFIG_LABEL,
    ROLE_LABEL,
    ROLLOUT_LABEL,
    SERVING_LABEL,
    render_children,
    template_environment,
)
from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import SpecDecodeRolloutSpec
from specdecode.domain.decision import DesiredChildren

pytestmark = pytest.mark.unit

FULL = example_spec("examples/specdecode-rollout.yaml")
ANALYSIS = DesiredChildren(production=None, shadows=True, candidate=setting_of(FULL.speculative))


def render(
    desired: DesiredChildren, spec: SpecDecodeRolloutSpec = FULL, name: str = "llama-8b"
) -> dict[tuple[str, str], dict[str, Any]]:
    objects = render_children(name, "team-a", UID, spec, desired)
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    assert isinstance(only, dict)
    return only


def with_updates(spec: SpecDecodeRolloutSpec, **sections: dict[str, Any]) -> SpecDecodeRolloutSpec:
    wire = spec.to_wire()
    for section, values in sections.items():
        wire[section] = {**wire[section], **values}  # type: ignore[dict-item]
    return SpecDecodeRolloutSpec.model_validate(wire)


def test_children_names_and_order() -> None:
    assert list(render(DesiredChildren(production=None))) == [
        ("Deployment", "llama-8b"),
        ("Service", "llama-8b"),
    ]
    assert [name for _, name in render(ANALYSIS)] == [
        "llama-8b",
        "llama-8b",
        "llama-8b-baseline",
        "llama-8b-baseline",
        "llama-8b-candidate",
        "llama-8b-candidate",
    ]


def test_exactly_one_speculative_flag_carrying_the_config() -> None:
    children = render(ANALYSIS)
    args = container(children[("Deployment", "llama-8b-candidate")])["args"]
    assert args.count("--speculative-config") == 1
    value = json.loads(args[args.index("--speculative-config") + 1])
    assert FULL.speculative is not None
    assert value == FULL.speculative.to_wire()
    assert not any(a.startswith("--speculative-config=") for a in args)


def test_plain_decoding_has_no_speculative_flag() -> None:
    for role in ("llama-8b", "llama-8b-baseline"):
        deployment = render(ANALYSIS)[("Deployment", role)]
        assert "--speculative-config" not in container(deployment)["args"]
        template = deployment["spec"]["template"]["metadata"]
        assert template["annotations"]["specdecode.io/speculative-config"] == ""
        assert template["labels"][CONFIG_LABEL] == "none"


def test_engine_args_order_and_extra_args_last() -> None:
    args = container(render(ANALYSIS)[("Deployment", "llama-8b")])["args"]
    assert args[0] == "meta-llama/Llama-3.1-8B-Instruct"
    assert args[args.index("--tensor-parallel-size") + 1] == "1"
    assert args[args.index("--served-model-name") + 1] == "llama-3.1-8b-instruct"
    assert args[-1] == "--enable-prefix-caching"
    assert container(render(ANALYSIS)[("Deployment", "llama-8b")])["command"] == ["vllm", "serve"]


def test_gpus_requested_and_limited_with_the_pool_resource_name() -> None:
    spec = with_updates(
        FULL,
        gpuPool={"gpuResourceName": "amd.com/gpu", "gpusPerReplica": 2, "tensorParallelSize": 2},
    )
    for kind, deployment in render(ANALYSIS, spec).items():
        if kind[0] != "Deployment":
            continue
        resources = container(deployment)["resources"]
        assert resources["limits"]["amd.com/gpu"] == "2"
        assert resources["requests"]["amd.com/gpu"] == "2"
        assert resources["requests"]["memory"] == "48Gi"
        assert "nvidia.com/gpu" not in resources["limits"]


def test_every_child_is_owned_and_labelled() -> None:
    for (_kind, name), obj in render(ANALYSIS).items():
        (owner,) = obj["metadata"]["ownerReferences"]
        assert owner == {
            "apiVersion": "specdecode.io/v1alpha1",
            "kind": "SpecDecodeRollout",
            "name": "llama-8b",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "vllm"
        assert labels["app.kubernetes.io/instance"] == "llama-8b"
        assert labels["app.kubernetes.io/managed-by"] == "specdecode-operator"
        assert labels[ROLLOUT_LABEL] == "llama-8b"
        assert labels[ROLE_LABEL] == {"llama-8b": "production"}.get(name, name.rsplit("-", 1)[1])
        assert obj["metadata"]["namespace"] == "team-a"


def test_deployment_selectors_are_stable_and_match_their_pods() -> None:
    for (kind, _), obj in render(ANALYSIS).items():
        if kind != "Deployment":
            continue
        selector = obj["spec"]["selector"]["matchLabels"]
        assert set(selector) == {ROLLOUT_LABEL, ROLE_LABEL}  # immutable: never the config
        pod_labels = obj["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= pod_labels.items()
        assert obj["spec"]["revisionHistoryLimit"] == 3


@pytest.mark.parametrize("live_canary", [False, True])
def test_production_service_takes_candidate_pods_only_in_a_live_canary(live_canary: bool) -> None:
    desired = DesiredChildren(
        production=None,
        shadows=True,
        candidate=setting_of(FULL.speculative),
        live_canary=live_canary,
    )
    children = render(desired)
    selector = children[("Service", "llama-8b")]["spec"]["selector"]

    def selected(deployment: str) -> bool:
        labels = children[("Deployment", deployment)]["spec"]["template"]["metadata"]["labels"]
        return bool(selector.items() <= labels.items())

    assert selector[SERVING_LABEL] == "true"
    assert selected("llama-8b")
    assert not selected("llama-8b-baseline")
    assert selected("llama-8b-candidate") is live_canary
    shadow_selector = children[("Service", "llama-8b-candidate")]["spec"]["selector"]
    assert shadow_selector == {ROLE_LABEL: "candidate", ROLLOUT_LABEL: "llama-8b"}


def test_changed_config_changes_the_pod_template() -> None:
    before = render(DesiredChildren(production=None))[("Deployment", "llama-8b")]
    after = render(DesiredChildren(production=setting_of(FULL.speculative)))[
        ("Deployment", "llama-8b")
    ]
    assert FULL.speculative is not None
    labels = after["spec"]["template"]["metadata"]["labels"]
    assert labels[CONFIG_LABEL] == FULL.speculative.fingerprint()
    assert before["spec"]["template"] != after["spec"]["template"]
    assert before["spec"]["selector"] == after["spec"]["selector"]


def test_pool_placement_probes_volumes_and_scrape_annotations() -> None:
    deployment = render(ANALYSIS)[("Deployment", "llama-8b-candidate")]
    pod = deployment["spec"]["template"]
    assert pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert pod["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    engine = container(deployment)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert engine[probe]["httpGet"] == {"path": "/health", "port": 8000}
    startup = engine["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] == 1800
    mounts = {m["name"]: m["mountPath"] for m in engine["volumeMounts"]}
    assert mounts == {"dshm": "/dev/shm", "model-cache": "/root/.cache/huggingface"}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory"}
    assert volumes["model-cache"]["persistentVolumeClaim"] == {"claimName": "hf-model-cache"}
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == "8000"
    assert annotations["prometheus.io/path"] == "/metrics"
    hf_token = engine["env"][0]
    assert hf_token == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
    }


@pytest.mark.parametrize("timeout", [10, 37, 125, 1800, 3601])
def test_startup_probe_budget_is_exactly_the_startup_timeout(timeout: int) -> None:
    period, threshold = startup_probe_timing(timeout)
    assert period * threshold == timeout
    assert period in (1, 2, 5, 10)


@pytest.mark.parametrize(("replicas", "surge", "unavailable"), [(1, 1, 0), (3, 0, 1)])
def test_production_strategy(replicas: int, surge: int, unavailable: int) -> None:
    spec = with_updates(FULL, serving={"replicas": replicas})
    children = render(ANALYSIS, spec)
    production = children[("Deployment", "llama-8b")]["spec"]
    assert production["replicas"] == replicas
    assert production["strategy"]["rollingUpdate"] == {
        "maxSurge": surge,
        "maxUnavailable": unavailable,
    }
    for shadow in ("llama-8b-baseline", "llama-8b-candidate"):
        assert children[("Deployment", shadow)]["spec"]["replicas"] == 1
        assert children[("Deployment", shadow)]["spec"]["strategy"] == {"type": "Recreate"}


def test_hostile_strings_stay_values() -> None:
    hostile = 'x": 1}\n- evil: "y'
    spec = with_updates(FULL, model={"servedModelName": hostile})
    args = container(render(ANALYSIS, spec)[("Deployment", "llama-8b")])["args"]
    assert args[args.index("--served-model-name") + 1] == hostile


def test_templates_refuse_missing_values() -> None:
    template = template_environment().get_template("service.yaml.j2")
    with pytest.raises(jinja2.UndefinedError):
        template.render({"name": "x"})
