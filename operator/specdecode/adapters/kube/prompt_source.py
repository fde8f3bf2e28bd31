"""Read the prompt set a rollout names, so the operator can check it before load starts.

The load pods mount the same ConfigMap or Secret and parse it with the same parser; the
operator reads it once per stage run first, so a missing object or a bad line becomes a
Failed phase naming it, never a load pod crash-looping on it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.api.traffic import ConfigMapKeyRef, TrafficSpec
from specdecode.domain.prompt_set import prompt_text_problem, unusable
from specdecode.domain.prompts import PromptSourceError, SamplingDefaults


def read_prompt_text(clients: KubeClients, namespace: str, traffic: TrafficSpec) -> str | None:
    """The JSONL text of the referenced prompt set; None for a built-in set."""
    sources = (
        ("ConfigMap", traffic.config_map_ref, clients.core.read_namespaced_config_map, _text),
        ("Secret", traffic.secret_ref, clients.core.read_namespaced_secret, _base64_text),
    )
    for kind, ref, read_object, decode in sources:
        if ref is not None:
            return decode(_read(f"{kind} {namespace}/{ref.name}", ref, namespace, read_object))
    return None


def _text(value: str | bytes) -> str:
    """A ConfigMap's value as it is."""
    return value if isinstance(value, str) else value.decode()


def _base64_text(value: str | bytes) -> str:
    """A Secret's value, which the API serves base64-encoded."""
    return base64.b64decode(value).decode()


def _read(
    what: str, ref: ConfigMapKeyRef, namespace: str, read_object: Callable[[str, str], Any]
) -> str | bytes:
    """One key of a ConfigMap or Secret, or a PromptSourceError that names the object."""
    try:
        data: Mapping[str, str | bytes] = read_object(ref.name, namespace).data or {}
    except ApiException as error:
        if error.status == 404:
            raise PromptSourceError(f"{what} does not exist") from error
        raise PromptSourceError(f"{what} cannot be read: {error.status} {error.reason}") from error
    if ref.key not in data:
        raise PromptSourceError(f"{what} has no key {ref.key}")
    return data[ref.key]


def prompt_set_problem(clients: KubeClients, namespace: str, traffic: TrafficSpec) -> str | None:
    """Why the prompt set cannot be replayed, or None: read here, judged by the domain's
    rule (`domain.prompt_set`, parsed as the load pods will)."""
    try:
        text = read_prompt_text(clients, namespace, traffic)
    except PromptSourceError as error:
        return unusable(error)
    sampling = SamplingDefaults(temperature=traffic.temperature, top_p=traffic.top_p)
    return prompt_text_problem(text, traffic.max_tokens, sampling)
