"""The evidence fingerprint: what an analysis' looks were measured on, hashed part by part.

Why: an analysis is evidence about one candidate under one plan, engine and prompt set;
each part is hashed into status when the analysis starts, and a part that differs later
restarts it (`EvidenceChanged`, naming the parts), so no verdict mixes looks of two.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from specdecode.api.base import KubeModel
from specdecode.api.rollout import SpecDecodeRolloutSpec
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.domain.observations import Observations
from specdecode.vocabulary import TrafficSourceType

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
PROMPTS_PART = "prompts"
# Mirror's pairing as resolved, default included: the default (Splitter) decides what a
# Mirror analysis reads (the splitter's paired streams or the engines' metrics), so an
# analysis begun when the default differed (an operator before the splitter, ServerSide in
# effect) restarts, named, instead of mixing looks of two kinds of evidence.
MIRROR_PAIRING_PART = "analysis.traffic.mirrorPairing"
SOURCE_PART = "workloadRef.template"
OBSERVED_PARTS = frozenset({PROMPTS_PART, SOURCE_PART})
Parts = dict[str, str]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:10]


def _field_parts(prefix: str, model: KubeModel, fields: set[str]) -> Parts:
    """One part per field of `model` in `fields` set to other than its default, keyed by
    its wire path (`engine.image`)."""
    values = model.model_dump(mode="json", by_alias=True, include=fields, exclude_defaults=True)
    return {f"{prefix}.{name}": _digest(value) for name, value in values.items()}


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
    return _digest(engine_parts(spec))


def evidence_parts(spec: SpecDecodeRolloutSpec, observations: Observations) -> Parts:
    """Every part of the evidence as it stands now (see the module docstring)."""
    parts = _field_parts("analysis", spec.analysis, set(PLAN_FIELDS))
    traffic = spec.analysis.traffic
    if traffic.source is TrafficSourceType.MIRROR:
        parts[MIRROR_PAIRING_PART] = _digest(traffic.mirror_pairing.value)
    source = observations.source
    if spec.workload_ref is None:
        parts.update(engine_parts(spec))
    elif source is not None and source.problem is None and source.template_hash is not None:
        parts[SOURCE_PART] = source.template_hash
    if observations.prompts_digest is not None:
        parts[PROMPTS_PART] = observations.prompts_digest
    return parts


def as_record(parts: Parts) -> list[str]:
    """`status.evidence`: the parts as sorted `part=hash` entries (a list, which a merge
    patch replaces whole; see the field's description)."""
    return [f"{key}={value}" for key, value in sorted(parts.items())]


def recorded_parts(status: SpecDecodeRolloutStatus) -> Parts | None:
    """The parts `status.evidence` recorded, or None when nothing was."""
    if status.evidence is None:
        return None
    return dict(entry.split("=", 1) for entry in status.evidence if "=" in entry)


def joint_fingerprint(parts: Parts) -> str:
    """`status.analysisFingerprint`: one hash of every part."""
    return _digest(parts)


def plan_fingerprint(spec: SpecDecodeRolloutSpec) -> str:
    """The plan-only hash an operator before the evidence parts recorded as
    `analysisFingerprint`: such an analysis is compared on its plan alone."""
    plan = spec.analysis.model_dump(
        mode="json", by_alias=True, include=set(PLAN_FIELDS), exclude_defaults=True
    )
    return _digest(plan)


def changed_parts(
    spec: SpecDecodeRolloutSpec, status: SpecDecodeRolloutStatus, current: Parts
) -> list[str]:
    """The parts that differ from those the analysis recorded, named for a message; empty
    if none (or if nothing was recorded: an analysis an older operator began goes on)."""
    recorded = recorded_parts(status)
    if recorded is None:  # an older operator's plan hash, or a CRD that prunes `evidence`
        fingerprint = status.analysis_fingerprint
        if fingerprint in (None, joint_fingerprint(current), plan_fingerprint(spec)):
            return []
        return ["the analysis plan or what the engines run"]
    names = []
    for key in sorted(recorded.keys() | current.keys()):
        if key in OBSERVED_PARTS and (key not in recorded or key not in current):
            continue  # not read yet, or not readable now: compared once both are known
        if recorded.get(key) != current.get(key):
            names.append(describe_part(spec, key))
    return names


def recorded_evidence(status: SpecDecodeRolloutStatus, current: Parts, fresh: bool) -> Parts | None:
    """The analysis' record after this reconcile, or None to write nothing: every part now
    if it began now (`fresh`), else the record plus any observed part read for the first
    time. An analysis an older operator began (no record) gets none: filling one in would
    be a write on every reconcile wherever the CRD prunes the field."""
    if fresh:
        return dict(current)
    recorded = recorded_parts(status)
    if recorded is None:
        return None
    first_read = {
        key: value
        for key, value in current.items()
        if key in OBSERVED_PARTS and key not in recorded
    }
    return {**recorded, **first_read}


def describe_part(spec: SpecDecodeRolloutSpec, key: str) -> str:
    """A part as a message names it: its field path, or the object it was read from."""
    traffic = spec.analysis.traffic
    if key == PROMPTS_PART:
        if traffic.config_map_ref is not None:
            return f"prompt ConfigMap {traffic.config_map_ref.name}"
        if traffic.secret_ref is not None:
            return f"prompt Secret {traffic.secret_ref.name}"
    if key == MIRROR_PAIRING_PART:
        return f"{key} ({traffic.mirror_pairing.value})"
    if key == SOURCE_PART and spec.workload_ref is not None:
        return f"Deployment/{spec.workload_ref.name}'s pod template"
    return key
