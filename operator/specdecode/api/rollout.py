"""The SpecDecodeRollout resource: identity (group, version, kind) and its spec.

The CRD YAML in `crds/` is generated from these models by `specdecode.tools.crdgen`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import ClassVar, Self

from pydantic import Field, field_validator, model_validator

from specdecode.api import rules as r
from specdecode.api.adoption import (
    ADOPTION_RULES,
    PromotionSpec,
    PromotionStrategy,
    WorkloadRef,
    strategy_of,
)
from specdecode.api.analysis import AnalysisSpec
from specdecode.api.analysis_rules import SPEC_JUDGED_RULES
from specdecode.api.base import KubeModel, RuledModel, optional, section
from specdecode.api.guard import GuardSpec
from specdecode.api.schedule_reach import SCHEDULE_REACH_RULES
from specdecode.api.speculative import SpeculativeConfig
from specdecode.api.status import SpecDecodeRolloutStatus
from specdecode.api.version_rules import draft_fits_target_rules, spec_rules
from specdecode.api.workload import EngineSpec, GpuPoolSpec, ModelSpec, ServingSpec

# Re-exported: the wire spells these as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import ACTION_ANNOTATION as ACTION_ANNOTATION  # noqa: PLC0414
from specdecode.vocabulary import ACTIONS as ACTIONS  # noqa: PLC0414
from specdecode.vocabulary import GROUP as GROUP  # noqa: PLC0414

VERSION = "v1alpha1"
KIND = "SpecDecodeRollout"
PLURAL = "specdecoderollouts"
SINGULAR = "specdecoderollout"
SHORT_NAMES = ("sdr",)
API_VERSION = f"{GROUP}/{VERSION}"

# Children are named `<name>`, `<name>-baseline` and `<name>-candidate`, and Services need
# DNS-1035 labels (<= 63 characters, starting with a letter): so the rollout name is one
# too, 10 characters shorter. The CRD enforces the same rule in CEL at the root.
MAX_NAME_LENGTH = 53
NAME_PATTERN = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# Rules that join spec fields: the speculative config against the vLLM release and the
# target model (written once: `rules`; the CRD renders the same rules as CEL).
SPEC_RULES = r.RuleSet((*spec_rules(), *draft_fits_target_rules()))


def _unless_read_from_source(rule: r.Rule) -> r.Rule:
    """`rule` as the written spec carries it: a rule that reads `engine` or `model` holds
    while they are absent (a workloadRef's source gives them; the resolved spec, validated
    by the same `SPEC_RULES`, checks them on the values read)."""
    reads = rule.check.cel()
    if "self.engine" not in reads and "self.model" not in reads:
        return rule
    given = r.all_of(r.Has(r.at("model")), r.Has(r.at("engine")))
    return replace(rule, check=r.implies(given, rule.check))


# The same rules on the spec as written: the CRD carries these, the written model enforces them.
WRITTEN_SPEC_RULES = r.RuleSet(tuple(_unless_read_from_source(rule) for rule in SPEC_RULES.rules))
# Rules on the whole object (only these may read `self.metadata.name`), written once.
ROOT_RULES = r.RuleSet(
    (
        r.Rule(
            r.all_of(
                r.Binary("<=", r.size(r.at("metadata.name")), r.lit(MAX_NAME_LENGTH)),
                r.matches(r.at("metadata.name"), NAME_PATTERN.pattern),
            ),
            f"metadata.name must be a DNS-1035 label of at most {MAX_NAME_LENGTH} characters "
            "(children append -candidate)",
        ),
    )
)


class WrittenRolloutSpec(RuledModel):
    """The desired state as written: a model on a GPU pool, and the speculative config."""

    cross_field_rules = (ADOPTION_RULES, SPEC_JUDGED_RULES, SCHEDULE_REACH_RULES)

    # With a `workloadRef`, `model` and `engine` may be left out: they are read from the
    # source's vLLM container into `SpecDecodeRolloutSpec`, the resolved spec.

    model: ModelSpec | None = optional(
        "The target model. Required without a workloadRef; with one, read from "
        "the source's vLLM container when absent (and checked against it when given)."
    )
    gpu_pool: GpuPoolSpec = section(GpuPoolSpec, "GPU nodes and GPUs per replica.")
    engine: EngineSpec | None = optional(
        "Engine image, resources and environment. Required without a "
        "workloadRef; with one, its image, release and port are read from the source's vLLM "
        "container when absent (and checked against it when given)."
    )
    serving: ServingSpec = section(ServingSpec, "Production Deployment size.")
    speculative: SpeculativeConfig | None = optional(
        "vLLM --speculative-config to roll out; empty means plain decoding."
    )
    analysis: AnalysisSpec = section(AnalysisSpec, "Shadow traffic, stages and gates.")
    guard: GuardSpec = section(
        GuardSpec, "After promotion: production's acceptance keeps being judged (drift)."
    )
    workload_ref: WorkloadRef | None = optional(
        "Judge this Deployment, owned by another tool (Argo CD, Flux, Helm), "
        "instead of owning production: shadows are copies of its pod template, and it is "
        "never written to under GitOps. model and engine are read from its vLLM container "
        "when absent, and must match it when given."
    )
    promotion: PromotionSpec = section(PromotionSpec, "How a passed config reaches production.")

    @property
    def strategy(self) -> PromotionStrategy:
        """The promotion strategy in force (GitOps with a workloadRef, else Owned)."""
        return strategy_of(self.workload_ref, self.promotion)

    # The release and draft rules: on the written spec only where model and engine are given.
    _spec_rules: ClassVar[r.RuleSet] = WRITTEN_SPEC_RULES

    @model_validator(mode="after")
    def _speculative_fits_release_and_target(self) -> Self:
        if self.speculative is None:
            return self
        problems = self._spec_rules.violations(self.to_wire())
        if problems:
            raise ValueError("; ".join(problems))
        return self


class SpecDecodeRolloutSpec(WrittenRolloutSpec):
    """The resolved spec every reader after the observe step gets: `model` and `engine`
    always set, either as written or, with a `workloadRef`, read from the source's vLLM
    container (`reconciler.source_boundary.resolve_spec`, the one place that fills them in). Built
    by validation, so every rule of the written spec holds for the values read too."""

    _spec_rules: ClassVar[r.RuleSet] = SPEC_RULES

    model: ModelSpec = Field(description="The target model.")
    engine: EngineSpec = Field(description="Engine image, resources and environment.")


class SpecDecodeObject(KubeModel):
    """What both resources share as read from the API server: the group's apiVersion, and
    a name that fits what is named after it (`ROOT_RULES`: a rollout's children, a
    tuning's trials and the rollout `apply: true` starts)."""

    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: str
    metadata: dict[str, object] = Field(default_factory=dict)

    @field_validator("metadata")
    @classmethod
    def _name_fits_what_is_named_after_it(cls, metadata: dict[str, object]) -> dict[str, object]:
        if isinstance(metadata.get("name"), str):  # unset: generateName, or not yet created
            ROOT_RULES.enforce({"metadata": metadata})
        return metadata


class SpecDecodeRollout(SpecDecodeObject):
    """The resource as a whole, for code that reads objects from the API server."""

    kind: str = Field(default=KIND)
    spec: WrittenRolloutSpec
    status: SpecDecodeRolloutStatus = Field(default_factory=SpecDecodeRolloutStatus)
