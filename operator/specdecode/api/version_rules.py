"""Rules that depend on the rollout's vLLM release, written once (see `rules`).

The release is `spec.engine.vllmVersion`, else the `v0.Y.Z` tag of `spec.engine.image`,
else the pinned release (`vllm_versions.effective_version`, which `version_in` renders
into CEL the same way). A method, field or value that exists only in other releases is
refused with a message naming it and the releases that have it.
"""

from __future__ import annotations

from specdecode.api import vllm_versions as facts
from specdecode.api.rules import (
    Binary,
    Cond,
    Expr,
    Has,
    Not,
    Ref,
    Rule,
    all_of,
    any_of,
    implies,
    lit,
    matches,
)

ANY_TAGGED_VERSION = facts.IMAGE_TAG_VERSION
SUPPORTED = facts.Span(facts.OLDEST_SUPPORTED[1])


def version_in(span: facts.Span, engine: Ref) -> Expr:
    """True when the engine's effective vLLM release lies in `span`."""
    core = facts.version_regex(span)
    default_inside = facts.minor_of(facts.PINNED_VLLM_VERSION) in span
    explicit, image = engine["vllmVersion"], engine["image"]
    return Cond(
        Has(explicit),
        matches(explicit, f"^{core}$"),
        Cond(
            matches(image, ANY_TAGGED_VERSION),
            matches(image, f":v{core}{facts.IMAGE_TAG_SUFFIX}"),
            lit(default_inside),
        ),
    )


def engine_rules() -> tuple[Rule, ...]:
    """Rules on spec.engine alone: the release must be one the operator supports."""
    engine = Ref("self")
    return (
        Rule(
            version_in(SUPPORTED, engine),
            f"engine: vLLM {facts.SUPPORTED_RANGE_TEXT} is supported; the release is "
            "engine.vllmVersion, else the image tag v0.Y.Z, else "
            f"{facts.PINNED_VLLM_VERSION}",
            ".vllmVersion",
        ),
    )


def _speculative(name: str) -> Ref:
    return Ref("self", ("speculative", name))


def _method_is(method: str) -> Expr:
    return Binary("==", _speculative("method"), lit(method))


def _only_in(condition: Expr, span: facts.Span) -> Expr:
    engine = Ref("self", ("engine",))
    return implies(all_of(Has(Ref("self", ("speculative",))), condition), version_in(span, engine))


def spec_rules() -> tuple[Rule, ...]:
    """Rules on the rollout spec: methods, fields and values by release."""
    rules = []
    for method, reason in facts.NEVER_STARTS.items():
        rules.append(
            Rule(
                Not(all_of(Has(Ref("self", ("speculative",))), _method_is(method))),
                f"speculative.method {method} starts in no vLLM release (vLLM V1 refuses it: "
                f"{reason})",
                ".speculative.method",
            )
        )
    for method, method_facts in facts.METHODS.items():
        if method_facts.span == facts.ALL or method in facts.NEVER_STARTS:
            continue
        message = f"speculative.method {method} needs {method_facts.span.text()}"
        if method == "draft_model":
            message += f" (before: {facts.DRAFT_MODEL_NOT_IMPLEMENTED})"
        rules.append(
            Rule(
                _only_in(Binary("==", _speculative("method"), lit(method)), method_facts.span),
                message,
                ".speculative.method",
            )
        )
    for field, span in facts.FIELDS.items():
        if field == "disable_by_batch_size":
            continue  # refused in every release (speculative_rules), with its replacement
        rules.append(
            Rule(
                _only_in(Has(_speculative(field)), span),
                f"speculative.{field} exists in {span.text()}",
                f".speculative.{field}",
                "FieldValueForbidden",
            )
        )
    for field, values in facts.FIELD_VALUES.items():
        for value, span in values.items():
            if span == facts.FIELDS[field]:
                continue
            present = all_of(
                Has(_speculative(field)), Binary("==", _speculative(field), lit(value))
            )
            rules.append(
                Rule(
                    _only_in(present, span),
                    f"speculative.{field} {value} exists in {span.text()}",
                    f".speculative.{field}",
                )
            )
    return tuple(rules)


def draft_fits_target_rules() -> tuple[Rule, ...]:
    """The draft's tensor parallelism and context against the target's."""
    draft_tp = _speculative("draft_tensor_parallel_size")
    draft_len = _speculative("max_model_len")
    target_len = Ref("self", ("model", "maxModelLen"))
    has_speculative = Has(Ref("self", ("speculative",)))
    return (
        Rule(
            implies(
                all_of(has_speculative, Has(draft_tp)),
                any_of(
                    Binary("==", draft_tp, lit(1)),
                    Binary("==", draft_tp, Ref("self", ("gpuPool", "tensorParallelSize"))),
                ),
            ),
            "speculative.draft_tensor_parallel_size must be 1 or gpuPool.tensorParallelSize",
            ".speculative.draft_tensor_parallel_size",
        ),
        Rule(
            implies(
                all_of(has_speculative, Has(draft_len), Has(target_len)),
                Binary("<=", draft_len, target_len),
            ),
            "speculative.max_model_len must be <= model.maxModelLen",
            ".speculative.max_model_len",
        ),
    )
