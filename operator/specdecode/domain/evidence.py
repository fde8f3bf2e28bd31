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

from specdecode.domain.analysis_plan import SpecEvidence
from specdecode.domain.observations import Observations
from specdecode.domain.rollout_state import RolloutState
from specdecode.vocabulary import MIRROR_PAIRING_PART

# The spec's parts (the plan, Mirror's pairing as resolved, an Owned rollout's engine) are
# hashed by wire path in `api.spec_evidence`; these two are observed. Mirror's pairing is a
# part because its default decides what a Mirror analysis reads (the splitter's paired
# streams or the engines' metrics): an analysis begun when the default differed restarts.
PROMPTS_PART = "prompts"
SOURCE_PART = "workloadRef.template"
OBSERVED_PARTS = frozenset({PROMPTS_PART, SOURCE_PART})
Parts = dict[str, str]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:10]


def evidence_parts(spec: SpecEvidence, observations: Observations) -> Parts:
    """Every part of the evidence as it stands now: the spec's and the observed ones."""
    parts = dict(spec.parts)
    # Owned: what the engines run is among the spec's parts; adopted: the source's template.
    source = None if spec.source is None else observations.source
    if source is not None and source.problem is None and source.template_hash is not None:
        parts[SOURCE_PART] = source.template_hash
    if observations.prompts_digest is not None:
        parts[PROMPTS_PART] = observations.prompts_digest
    return parts


def as_record(parts: Parts) -> list[str]:
    """`status.evidence`: the parts as sorted `part=hash` entries (a list, which a merge
    patch replaces whole; see the field's description)."""
    return [f"{key}={value}" for key, value in sorted(parts.items())]


def recorded_parts(status: RolloutState) -> Parts | None:
    """The parts `status.evidence` recorded, or None when nothing was."""
    if status.evidence is None:
        return None
    return dict(entry.split("=", 1) for entry in status.evidence if "=" in entry)


def joint_fingerprint(parts: Parts) -> str:
    """`status.analysisFingerprint`: one hash of every part."""
    return _digest(parts)


def changed_parts(spec: SpecEvidence, status: RolloutState, current: Parts) -> list[str]:
    """The parts that differ from those the analysis recorded, named for a message; empty
    if none (or if nothing was recorded: an analysis an older operator began goes on)."""
    recorded = recorded_parts(status)
    if recorded is None:  # an older operator's plan hash, or a CRD that prunes `evidence`
        fingerprint = status.analysis_fingerprint
        if fingerprint in (None, joint_fingerprint(current), spec.plan_fingerprint):
            return []
        return ["the analysis plan or what the engines run"]
    names = []
    for key in sorted(recorded.keys() | current.keys()):
        if key in OBSERVED_PARTS and (key not in recorded or key not in current):
            continue  # not read yet, or not readable now: compared once both are known
        if recorded.get(key) != current.get(key):
            names.append(describe_part(spec, key))
    return names


def recorded_evidence(status: RolloutState, current: Parts, fresh: bool) -> Parts | None:
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


def describe_part(spec: SpecEvidence, key: str) -> str:
    """A part as a message names it: its field path, or the object it was read from."""
    if key == PROMPTS_PART and spec.prompts is not None:
        return spec.prompts
    if key == MIRROR_PAIRING_PART:
        return f"{key} ({spec.mirror_pairing})"
    if key == SOURCE_PART and spec.source is not None:
        return f"Deployment/{spec.source}'s pod template"
    return key
