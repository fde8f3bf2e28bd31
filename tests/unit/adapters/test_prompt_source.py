"""The operator reads the prompt set a rollout names as the load pods will: a ConfigMap's
key as text, a Secret's key base64-decoded, and a missing object or key as an error that
names it (never a crash)."""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.adapters.kube.prompt_source import read_prompt_text
from specdecode.api.traffic import TrafficSpec
from specdecode.domain.prompts import PromptSourceError

pytestmark = pytest.mark.unit

LINE = '{"prompt": "hello"}\n'


class Core:
    """A CoreV1Api with one ConfigMap and one Secret, `prompts` in namespace `ns`."""

    def read_namespaced_config_map(self, name: str, namespace: str) -> Any:
        if (name, namespace) != ("prompts", "ns"):
            raise ApiException(status=404, reason="NotFound")
        return SimpleNamespace(data={"set.jsonl": LINE})

    def read_namespaced_secret(self, name: str, namespace: str) -> Any:
        if (name, namespace) != ("prompts", "ns"):
            raise ApiException(status=403, reason="Forbidden")
        return SimpleNamespace(data={"set.jsonl": base64.b64encode(LINE.encode()).decode()})


CLIENTS = cast(KubeClients, SimpleNamespace(core=Core()))


def traffic(field: str, name: str = "prompts", key: str = "set.jsonl") -> TrafficSpec:
    return TrafficSpec.model_validate({field: {"name": name, "key": key}})


@pytest.mark.parametrize("field", ["configMapRef", "secretRef"])
def test_a_configmap_key_is_read_as_text_and_a_secret_key_decoded(field: str) -> None:
    assert read_prompt_text(CLIENTS, "ns", traffic(field)) == LINE


def test_a_built_in_set_reads_nothing() -> None:
    assert read_prompt_text(CLIENTS, "ns", TrafficSpec()) is None


@pytest.mark.parametrize(
    ("field", "name", "key", "message"),
    [
        ("configMapRef", "gone", "set.jsonl", "ConfigMap ns/gone does not exist"),
        ("secretRef", "gone", "set.jsonl", "Secret ns/gone cannot be read: 403 Forbidden"),
        ("configMapRef", "prompts", "other", "ConfigMap ns/prompts has no key other"),
        ("secretRef", "prompts", "other", "Secret ns/prompts has no key other"),
    ],
)
def test_a_missing_object_or_key_is_an_error_naming_it(
    field: str, name: str, key: str, message: str
) -> None:
    with pytest.raises(PromptSourceError, match=f"^{message}$"):
        read_prompt_text(CLIENTS, "ns", traffic(field, name, key))
