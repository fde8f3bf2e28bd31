"""The spec's share of an analysis' evidence: which of its fields are hashed, by wire path.

Why in `api`: a part is a field of the wire schema as it is written (`engine.image`), so
which fields are measured and how they hash follow the schema, as the config's own hash
does (`speculative.fingerprint_of`). `domain.evidence` compares the parts; observe hands
them to it once a reconcile (`reconciler.analysis_boundary`). Rationale: docs/internals.md.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from specdecode.api.base import KubeModel
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.vocabulary import MIRROR_PAIRING_PART, TrafficSourceType

# What the evidence is made of and how its error is spent: the shadow traffic, the stages
# (load, durations, gates), the look cadence and the limits that split each look's error.
PLAN_FIELDS = frozenset(
    {"traffic", "stages", "interval_seconds", "failure_limit", "inconclusive_limit"}
)
# Engine fields that change no measurement: how the image is pulled, where the weights are
# cached, the hub token, the port and how long a start may take (a restart of an engine
# with the same image and args measures the same engine).
ENGINE_UNMEASURED = frozenset(
    {"image_pull_policy", "port", "model_cache", "hub_token_secret_ref", "startup_timeout_seconds"}
)
Parts = dict[str, str]


def digest(value: Any) -> str:
    """A short hash of a JSON value (keys sorted): one part's, or of all parts."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:10]


def _field_parts(prefix: str, model: KubeModel, fields: set[str]) -> Parts:
    """One part per field of `model` in `fields` set to other than its default, keyed by
    its wire path (`engine.image`)."""
    values = model.model_dump(mode="json", by_alias=True, include=fields, exclude_defaults=True)
    return {f"{prefix}.{name}": digest(value) for name, value in values.items()}


def engine_parts(spec: SpecDecodeRolloutSpec) -> Parts:
    """What an Owned rollout's engines run: every model and GPU pool field, and every engine
    field but `ENGINE_UNMEASURED` (new fields are hashed unless listed there: fail closed)."""
    engine_fields = set(type(spec.engine).model_fields) - ENGINE_UNMEASURED
    return {
        **_field_parts("model", spec.model, set(type(spec.model).model_fields)),
        **_field_parts("gpuPool", spec.gpu_pool, set(type(spec.gpu_pool).model_fields)),
        **_field_parts("engine", spec.engine, engine_fields),
    }


def engine_digest(spec: SpecDecodeRolloutSpec) -> str:
    """One hash of `engine_parts`: the label an Owned shadow Deployment is rendered with, so
    a restart waits for shadows that run the new engine, not the cached old ones."""
    return digest(engine_parts(spec))


def spec_parts(spec: SpecDecodeRolloutSpec) -> Parts:
    """Every part the spec alone makes: the plan, Mirror's pairing as resolved (default
    included) and, Owned, what the engines run."""
    parts = _field_parts("analysis", spec.analysis, set(PLAN_FIELDS))
    traffic = spec.analysis.traffic
    if traffic.source is TrafficSourceType.MIRROR:
        parts[MIRROR_PAIRING_PART] = digest(traffic.mirror_pairing.value)
    if spec.workload_ref is None:
        parts.update(engine_parts(spec))
    return parts


def plan_fingerprint(spec: SpecDecodeRolloutSpec) -> str:
    """The plan-only hash an operator before the evidence parts recorded as
    `analysisFingerprint`: such an analysis is compared on its plan alone."""
    plan = spec.analysis.model_dump(
        mode="json", by_alias=True, include=set(PLAN_FIELDS), exclude_defaults=True
    )
    return digest(plan)
