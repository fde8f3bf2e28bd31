"""Env resolution: literals, ConfigMap/Secret refs, envFrom, downward API, ordering."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.agent.env import PodRuntime, resolve_env
from localcluster.agent.objects import ContainerConfigError, DictObjectSource

pytestmark = pytest.mark.unit

SOURCE = DictObjectSource(
    config_maps={("ns", "cfg"): {"MODEL": "llama", "PORT": "8000", "bad key": "x"}},
    secrets={("ns", "sec"): {"TOKEN": "s3cret"}},
)
POD: dict[str, Any] = {
    "metadata": {"name": "p1", "namespace": "ns", "uid": "u1", "labels": {"app": "eng"}},
    "spec": {"nodeName": "gpu-0", "serviceAccountName": "sa"},
}
RUNTIME = PodRuntime(pod_ip="127.0.0.7")


def resolve(container: dict[str, Any]) -> dict[str, str]:
    return resolve_env(POD, {"name": "c", **container}, SOURCE, RUNTIME)


def test_literal_values_expand_earlier_variables_only() -> None:
    env = resolve(
        {
            "env": [
                {"name": "X", "value": "x"},
                {"name": "Y", "value": "$(X)-$(Z)"},
                {"name": "Z", "value": "z"},
            ]
        }
    )
    assert env == {"X": "x", "Y": "x-$(Z)", "Z": "z"}


def test_key_refs_and_field_refs() -> None:
    env = resolve(
        {
            "env": [
                {"name": "M", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "MODEL"}}},
                {"name": "T", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "TOKEN"}}},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            ]
        }
    )
    assert env == {
        "M": "llama",
        "T": "s3cret",
        "IP": "127.0.0.7",
        "N": "p1",
        "NS": "ns",
        "NODE": "gpu-0",
        "APP": "eng",
    }


def test_env_from_comes_first_and_env_overrides_it() -> None:
    env = resolve(
        {
            "envFrom": [
                {"configMapRef": {"name": "cfg"}},
                {"secretRef": {"name": "sec"}, "prefix": "S_"},
            ],
            "env": [{"name": "PORT", "value": "9000"}],
        }
    )
    assert env == {"MODEL": "llama", "PORT": "9000", "S_TOKEN": "s3cret"}
    assert "bad key" not in env


def test_missing_configmap_is_a_config_error() -> None:
    with pytest.raises(ContainerConfigError, match='configmap "nope" not found'):
        resolve(
            {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}]}
        )


def test_missing_key_is_a_config_error_unless_optional() -> None:
    ref = {"name": "cfg", "key": "MISSING"}
    with pytest.raises(ContainerConfigError, match="couldn't find key MISSING"):
        resolve({"env": [{"name": "X", "valueFrom": {"configMapKeyRef": ref}}]})
    optional = {**ref, "optional": True}
    assert resolve({"env": [{"name": "X", "valueFrom": {"configMapKeyRef": optional}}]}) == {}


def test_resource_field_ref_rounds_up_and_falls_back_to_node_allocatable() -> None:
    env = resolve(
        {
            "resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}},
            "env": [
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                {
                    "name": "MEM",
                    "valueFrom": {
                        "resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}
                    },
                },
                {"name": "REQ", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
            ],
        }
    )
    assert env == {"CPU": "2", "MEM": "1024", "REQ": "2"}
