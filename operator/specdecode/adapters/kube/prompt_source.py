"""Read the prompt set a rollout names, so the operator can check it before load starts.

The load pods mount the same ConfigMap or Secret and parse it with the same parser; the
operator reads it once per stage run first, so a missing object or a bad line becomes a
Failed phase naming it, never a load pod crash-looping on it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients
from specdecode.api.traffic import TrafficSpec
from specdecode.domain.prompt_set import prompt_text_problem, unusable
from specdecode.domain.prompts import PromptSourceError


def read_prompt_text(clients: KubeClients, namespace: str, traffic: TrafficSpec) -> str | None:
    """The JSONL text of the referenced prompt set; None for a built-in set."""
    if traffic.config_map_ref is not None:
        ref = traffic.config_map_ref
        data = _read(
            f"ConfigMap {namespace}/{ref.name}",
            ref.key,
            lambda: clients.core.read_namespaced_config_map(ref.name, namespace).data,
        )
        return data if isinstance(data, str) else data.decode()
    if traffic.secret_ref is not None:
        secret = traffic.secret_ref
        encoded = _read(
            f"Secret {namespace}/{secret.name}",
            secret.key,
            lambda: clients.core.read_namespaced_secret(secret.name, namespace).data,
        )
        return base64.b64decode(encoded).decode()
    return None


def _read(
    what: str, key: str, fetch: Callable[[], Mapping[str, str | bytes] | None]
) -> str | bytes:
    """One key of a ConfigMap or Secret, or a PromptSourceError that names the object."""
    try:
        data = fetch() or {}
    except ApiException as error:
        if error.status == 404:
            raise PromptSourceError(f"{what} does not exist") from error
        raise PromptSourceError(f"{what} cannot be read: {error.status} {error.reason}") from error
    if key not in data:
        raise PromptSourceError(f"{what} has no key {key}")
    return data[key]


def prompt_set_problem(clients: KubeClients, namespace: str, traffic: TrafficSpec) -> str | None:
    """Why the prompt set cannot be replayed, or None: read here, judged by the domain's
    rule (`domain.prompt_set`, parsed as the load pods will)."""
    try:
        text = read_prompt_text(clients, namespace, traffic)
    except PromptSourceError as error:
        return unusable(error)
    return prompt_text_problem(text, traffic)
