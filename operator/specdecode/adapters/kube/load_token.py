"""The token of a rollout's load pods: a Secret the rollout owns, made once, read once.

Why: a load pod's control endpoints decide what a verdict measures, and any pod that can
reach it could otherwise call them. Load pods refuse a control request without the token;
a Secret of that name the rollout does not own is never used. More: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import Callable
from typing import Any, cast

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients, read_if_present
from specdecode.adapters.load.pods import TOKEN_KEY, token_secret_name
from specdecode.adapters.render import ROLLOUT_LABEL, Owner


class LoadTokenError(Exception):
    """The token Secret cannot be used (another object holds its name)."""


def read_load_token(clients: KubeClients, namespace: str, rollout: str, uid: str) -> str | None:
    """The rollout's token, if its Secret exists; None if not yet."""
    name = token_secret_name(rollout)
    secret = read_if_present(lambda: clients.core.read_namespaced_secret(name, namespace))
    if secret is None:
        return None
    metadata = secret.metadata
    refs = (metadata.owner_references if metadata is not None else None) or []
    owners = {str(ref.uid) for ref in refs}
    value = (secret.data or {}).get(TOKEN_KEY)
    if uid not in owners or not value:
        raise LoadTokenError(
            f"Secret {namespace}/{name} exists and is not this rollout's load token: "
            "rename the rollout, or delete the Secret"
        )
    return base64.b64decode(value).decode()


def ensure_load_token(clients: KubeClients, owner: Owner) -> str:
    """The rollout's token, creating its Secret if there is none yet."""
    found = read_load_token(clients, owner.namespace, owner.name, owner.uid)
    if found is not None:
        return found
    token = secrets.token_urlsafe(32)
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": token_secret_name(owner.name),
            "namespace": owner.namespace,
            "labels": {ROLLOUT_LABEL: owner.name},
            "ownerReferences": [owner.reference()],
        },
        "stringData": {TOKEN_KEY: token},
    }
    try:
        clients.core.create_namespaced_secret(owner.namespace, cast(Any, body))
    except ApiException as error:
        if error.status != 409:
            raise
        raced = read_load_token(clients, owner.namespace, owner.name, owner.uid)
        if raced is None:
            raise
        return raced
    return token


async def known_load_token(
    clients: KubeClients, tokens: dict[str, str], rollout: str, uid: str
) -> str | None:
    """The rollout's ("namespace/name") load token: from `tokens` (the process' cache),
    else read once and kept there; None while it has none (its pods, if any, predate
    tokens and require none). `LoadTokenError`: a Secret of that name is not the rollout's."""
    token = tokens.get(rollout)
    if token is None and uid:
        namespace, name = rollout.split("/", 1)
        token = await asyncio.to_thread(read_load_token, clients, namespace, name, uid)
        if token is not None:
            tokens[rollout] = token
    return token


async def usable_load_token(
    clients: KubeClients,
    tokens: dict[str, str],
    rollout: str,
    uid: str,
    report: Callable[[str], None] | None = None,
) -> str | None:
    """`known_load_token`, None as well when the Secret is not the rollout's: why goes to
    `report` (the apply's findings; an observation passes none: it does not write, and the
    apply finds it too), not up the reconcile."""
    try:
        return await known_load_token(clients, tokens, rollout, uid)
    except LoadTokenError as error:  # swapped for another object's, or never the rollout's
        if report is not None:
            report(str(error))
        return None


async def token_for_new_pods(
    clients: KubeClients, tokens: dict[str, str], owner: Owner, report: Callable[[str | None], None]
) -> bool:
    """Whether pods that read the token at start may be created: it is in `tokens` (the
    process' cache), else made or read once now and kept there. `report` hears what that
    one read found: why the Secret cannot be used (another object holds its name), or
    None (it can); with a problem, no pod starts."""
    key = f"{owner.namespace}/{owner.name}"
    if key in tokens:
        return True
    try:
        made = await asyncio.to_thread(ensure_load_token, clients, owner)
    except LoadTokenError as error:
        report(str(error))
        return False
    report(None)
    tokens[key] = made
    return True
