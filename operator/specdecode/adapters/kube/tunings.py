"""Reading and writing what a SpecDecodeTuning owns: its status, report and trial data.

The report ConfigMap (report and the runner's `state.json`, so a restart resumes the round),
each trial's blocks ConfigMap (measured blocks survive a paused cell), and with
`apply: true` the winner's SpecDecodeRollout, which is edited only if the tuning started it.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping
from typing import Any

from kubernetes.client import ApiException

from specdecode.adapters.kube.client import KubeClients, read_if_present
from specdecode.adapters.render import Owner
from specdecode.api import GROUP, PLURAL, VERSION
from specdecode.api import KIND as ROLLOUT_KIND
from specdecode.api.tuning import PLURAL as TUNING_PLURAL
from specdecode.api.tuning_status import SpecDecodeTuningStatus
from specdecode.domain.load_report import block_from_wire, block_to_wire
from specdecode.domain.observations import LatencyBlock

REPORT_SUFFIX = "-report"
JSON_PATCH = "application/json-patch+json"
BLOCKS_SUFFIX = "-blocks"
# The annotation a rollout started by `apply: true` carries: the uid of the tuning that
# started it, the only tuning that may edit it again.
STARTED_BY = "specdecode.io/started-by-tuning"
STARTED_BY_PATH = "/metadata/annotations/" + STARTED_BY.replace("~", "~0").replace("/", "~1")
CREATED, PATCHED = "created", "patched"
LEFT_ALONE = "left alone"


def report_name(tuning: str) -> str:
    """The report ConfigMap of a tuning."""
    return f"{tuning}{REPORT_SUFFIX}"


def blocks_name(trial: str) -> str:
    """The ConfigMap keeping a trial cell's blocks of runs that ended."""
    return f"{trial}{BLOCKS_SUFFIX}"


def read_config_map(clients: KubeClients, namespace: str, name: str) -> dict[str, Any] | None:
    """The ConfigMap's `data` and `binaryData` (decoded), or None if absent."""
    found = read_if_present(lambda: clients.core.read_namespaced_config_map(name, namespace))
    if found is None:
        return None
    data: dict[str, Any] = dict(found.data or {})
    for key, encoded in (found.binary_data or {}).items():
        data[key] = base64.b64decode(encoded)
    return data


def apply_config_map(
    clients: KubeClients,
    owner: Owner,
    name: str,
    data: Mapping[str, str],
    manager: str,
    binary: Mapping[str, bytes] | None = None,
    force: bool = True,
) -> None:
    """Create or update the ConfigMap (server-side apply: the operator owns these keys);
    `force` False for one the caller saw absent (a conflict then raises, nothing taken)."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": owner.namespace,
            "labels": {"app.kubernetes.io/managed-by": "specdecode-operator"},
            "ownerReferences": [owner.reference()],
        },
        "data": dict(data),
    }
    if binary:
        body["binaryData"] = {k: base64.b64encode(v).decode() for k, v in binary.items()}
    clients.server_side_apply(body, manager, force=force)


def delete_config_map(clients: KubeClients, namespace: str, name: str) -> None:
    """Delete a ConfigMap (absent is fine)."""
    try:
        clients.core.delete_namespaced_config_map(name, namespace)
    except ApiException as error:
        if error.status != 404:
            raise


def pack_blocks(sides: Mapping[str, list[LatencyBlock]]) -> bytes:
    """Blocks per side as gzip-compressed JSON."""
    wire = {side: [block_to_wire(b) for b in blocks] for side, blocks in sides.items()}
    return gzip.compress(json.dumps(wire, separators=(",", ":")).encode())


def unpack_blocks(raw: bytes) -> dict[str, list[LatencyBlock]]:
    """The inverse of `pack_blocks`."""
    wire = json.loads(gzip.decompress(raw))
    return {side: [block_from_wire(b) for b in blocks] for side, blocks in wire.items()}


def patch_tuning_status(
    clients: KubeClients, namespace: str, name: str, status: SpecDecodeTuningStatus
) -> None:
    """Replace the tuning's status (the runner is its only writer; absent tuning: no-op)."""
    body = {"status": status.model_dump(mode="json", by_alias=True)}
    try:
        clients.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, TUNING_PLURAL, name, body
        )
    except ApiException as error:
        if error.status != 404:
            raise


def start_rollout(
    clients: KubeClients, namespace: str, name: str, spec: Mapping[str, Any], tuning_uid: str
) -> str:
    """Create the rollout, or replace `spec.speculative` of the one this tuning started.

    Returns what was done, for the status: `CREATED`, `PATCHED` or `LEFT_ALONE` (a rollout of
    that name exists that this tuning did not start: it is not touched).
    """
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": ROLLOUT_KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {STARTED_BY: tuning_uid},
        },
        "spec": dict(spec),
    }
    try:
        clients.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
        return CREATED
    except ApiException as error:
        if error.status != 409:
            raise
    # A JSON patch replaces `speculative` whole: a merge patch would keep keys of the old
    # config the winner lacks (a draft model under an n-gram winner), a config never measured.
    # Its first operation tests the annotation, so the check and the edit are one atomic
    # request: a rollout replaced by a user's meanwhile is refused by the server, not edited.
    winner = spec.get("speculative")
    ours = {"op": "test", "path": STARTED_BY_PATH, "value": tuning_uid}
    if winner is None:
        edit: dict[str, Any] = {"op": "remove", "path": "/spec/speculative"}
    else:
        edit = {"op": "add", "path": "/spec/speculative", "value": winner}
    try:
        clients.custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, name, [ours, edit], _content_type=JSON_PATCH
        )
    except ApiException as error:
        if error.status != 422:
            raise
        # Refused: not ours (the test), or ours and already plain decoding (the remove).
        current: Any = clients.custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, name
        )
        annotations = dict(current.get("metadata", {}).get("annotations") or {})
        if annotations.get(STARTED_BY) != tuning_uid:
            return LEFT_ALONE
        if winner is not None:
            raise
    return PATCHED
