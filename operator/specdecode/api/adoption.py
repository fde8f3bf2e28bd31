"""`spec.workloadRef` and `spec.promotion`: judge a vLLM Deployment another tool owns.

Why: teams serve vLLM from Git, Helm or a platform's controller, and writing to an object
a GitOps tool owns starts a fight the tool wins. So shadows copy the source's pod template,
and under `GitOps` the verdict carries the owner's change instead of writing it.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from specdecode.api import rules as r
from specdecode.api.base import KubeModel
from specdecode.api.traffic import server_side_mirror

# Re-exported: the wire spells it as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import PromotionStrategy as PromotionStrategy  # noqa: PLC0414


class WorkloadRef(KubeModel):
    """The Deployment production runs as, owned by another tool."""

    kind: Literal["Deployment"] = Field(default="Deployment", description="Only Deployment.")
    name: str = Field(
        min_length=1, max_length=253, description="The Deployment, in the rollout's namespace."
    )
    container: str | None = Field(
        default=None,
        max_length=63,
        description="The vLLM container; default: the only container, else the one named "
        "vllm, else the one whose command or args run `serve`.",
    )
    keep_labels: list[Annotated[str, Field(min_length=1, max_length=317)]] = Field(
        default_factory=list,
        max_length=32,
        description="Pod label keys the shadows keep (cost allocation, team). Every other "
        "label of the source's pods is dropped: labels are routing, and a router that "
        "selects pods by label (production-stack's --k8s-label-selector, an InferencePool) "
        "would send live traffic to a copy that kept them. A kept key that a Service or "
        "the source's selector selects on is refused.",
    )


class PromotionSpec(KubeModel):
    """How a passed config reaches production."""

    strategy: PromotionStrategy | None = Field(
        default=None,
        description="Owned (without workloadRef: the operator rolls production); GitOps (with "
        "workloadRef: nothing is written to the source; the verdict carries the patch and "
        "the rollout waits for the owner); Patch (with workloadRef: the operator server-side "
        "applies the vLLM container's args alone under its own field manager, never forcing "
        "a conflict, which it reports and then waits as under GitOps). Default: GitOps with "
        "workloadRef, else Owned.",
    )


def _strategy_is(strategy: PromotionStrategy) -> r.Expr:
    return r.all_of(
        r.Has(r.at("promotion")),
        r.Has(r.at("promotion.strategy")),
        r.Binary("==", r.at("promotion.strategy"), r.lit(strategy.value)),
    )


_ADOPTED = r.Has(r.at("workloadRef"))
_STAGE = r.Ref("s")
# Written once: the spec's model validator enforces them and the CRD carries them as CEL.
ADOPTION_RULES = r.RuleSet(
    (
        r.Rule(
            r.implies(r.Not(_ADOPTED), r.Has(r.at("model"))),
            "model is required without a workloadRef (with one it is read from the source's "
            "vLLM container)",
            ".model",
            "FieldValueRequired",
        ),
        r.Rule(
            r.implies(r.Not(_ADOPTED), r.Has(r.at("engine"))),
            "engine is required without a workloadRef (with one its image, release and port "
            "are read from the source's vLLM container)",
            ".engine",
            "FieldValueRequired",
        ),
        r.Rule(
            r.implies(_ADOPTED, r.Not(_strategy_is(PromotionStrategy.OWNED))),
            "promotion.strategy Owned cannot promote a workloadRef: the source belongs to "
            "another tool (use GitOps)",
            ".promotion.strategy",
        ),
        r.Rule(
            r.implies(_strategy_is(PromotionStrategy.GITOPS), _ADOPTED),
            "promotion.strategy GitOps needs a workloadRef (the object its owner changes)",
            ".promotion.strategy",
            "FieldValueRequired",
        ),
        r.Rule(
            r.implies(_strategy_is(PromotionStrategy.PATCH), _ADOPTED),
            "promotion.strategy Patch needs a workloadRef (the object it patches)",
            ".promotion.strategy",
            "FieldValueRequired",
        ),
        r.Rule(
            r.implies(
                r.all_of(_ADOPTED, r.Has(r.at("guard")), r.Has(r.at("guard.onDrift"))),
                r.Binary("==", r.at("guard.onDrift"), r.lit("Alert")),
            ),
            "workloadRef: guard.onDrift Rollback or Reanalyze would have to change the source, "
            "which its owner does (use Alert)",
            ".guard.onDrift",
        ),
        # Mirror through the splitter needs nothing of the owner's route: the owner adds
        # one mirror toward the splitter's Service (status.mirror.splitterService) in the
        # route, mesh or proxy they keep in Git. The operator writes no route it does not
        # own, so it may not be told one, and ServerSide pairing (a mirror per shadow on
        # the route, written by the operator) stays refused.
        r.Rule(
            r.implies(_ADOPTED, r.Not(r.Has(r.at("analysis.traffic.httpRoute")))),
            "workloadRef: analysis.traffic.httpRoute is refused (the source's routes belong "
            "to its owner and the operator writes none of them): leave it unset and mirror "
            "to Service <rollout name>-splitter port 8080 from your own route, mesh or proxy",
            ".analysis.traffic.httpRoute",
            "FieldValueForbidden",
        ),
        r.Rule(
            r.implies(_ADOPTED, r.Not(server_side_mirror(r.at("analysis.traffic")))),
            "workloadRef: Mirror with mirrorPairing ServerSide needs a mirror per shadow "
            "written on the source's route, which belongs to its owner; use Splitter (the "
            "default) and mirror to Service <rollout name>-splitter port 8080 yourself",
            ".analysis.traffic.mirrorPairing",
        ),
        r.Rule(
            r.implies(
                _ADOPTED,
                r.every(
                    r.at("analysis.stages"),
                    "s",
                    r.Not(r.all_of(r.Has(_STAGE["liveCanary"]), _STAGE["liveCanary"])),
                ),
            ),
            "workloadRef: analysis.stages with liveCanary would put shadows behind the source's "
            "Service; not supported",
            ".analysis.stages",
        ),
    )
)


def strategy_of(workload: WorkloadRef | None, promotion: PromotionSpec) -> PromotionStrategy:
    """The strategy in force: the one given, else the default for the rollout's kind."""
    if promotion.strategy is not None:
        return promotion.strategy
    return PromotionStrategy.GITOPS if workload is not None else PromotionStrategy.OWNED


class WorkloadStatus(KubeModel):
    """What the operator read from the source and what it asks its owner to apply."""

    source: str = Field(description="Deployment/<name> the rollout judges.")
    image: str | None = Field(
        default=None, description="The source's vLLM image (engine.image in force)."
    )
    model: str | None = Field(
        default=None, description="The model its vLLM container serves (model.name in force)."
    )
    served_model_name: str | None = Field(
        default=None, description="The name requests and metrics use (in force)."
    )
    vllm_version: str | None = Field(
        default=None, description="The vLLM release the rules and the version check use."
    )
    template_hash: str | None = Field(
        default=None,
        description="Hash of the source's pod template the analysis runs against; a change "
        "restarts the analysis.",
    )
    dropped_labels: list[str] = Field(
        default_factory=list,
        description="Source pod label keys the shadows do not carry (all but "
        "workloadRef.keepLabels).",
    )
    owner_patch: str | None = Field(
        default=None,
        description="The change that promotes the passed config: a strategic-merge patch "
        "of the source Deployment (JSON). Apply it as its owner would (Git).",
    )
    verified_at: datetime | None = Field(
        default=None, description="When the source's pods were first seen running it."
    )
