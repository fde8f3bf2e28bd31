"""Rules that depend on the rollout's vLLM release, written once (see `rules`).

The release is `spec.engine.vllmVersion`, else the `v0.Y.Z` tag of `spec.engine.image`,
else the pinned release (`vllm_versions.effective_version`, which `version_in` renders
into CEL the same way). A method, field or value that exists only in other releases is
refused with a message naming it and the releases that have it.
"""

from __future__ import annotations

from specdecode.api import rules as r
from specdecode.api import vllm_versions as facts

ANY_TAGGED_VERSION = facts.IMAGE_TAG_VERSION
SUPPORTED = facts.Span(facts.OLDEST_SUPPORTED[1])


def version_in(span: facts.Span, engine: r.Ref) -> r.Expr:
    """True when the engine's effective vLLM release lies in `span`."""
    core = facts.version_regex(span)
    default_inside = facts.minor_of(facts.PINNED_VLLM_VERSION) in span
    explicit, image = engine["vllmVersion"], engine["image"]
    return r.Cond(
        r.Has(explicit),
        r.matches(explicit, f"^{core}$"),
        r.Cond(
            r.matches(image, ANY_TAGGED_VERSION),
            r.matches(image, f":v{core}{facts.IMAGE_TAG_SUFFIX}"),
            r.lit(default_inside),
        ),
    )


def engine_rules() -> tuple[r.Rule, ...]:
    """Rules on spec.engine alone: the release must be one the operator supports."""
    engine = r.Ref("self")
    return (
        r.Rule(
            version_in(SUPPORTED, engine),
            f"engine: vLLM {facts.SUPPORTED_RANGE_TEXT} is supported; the release is "
            "engine.vllmVersion, else the image tag v0.Y.Z, else "
            f"{facts.PINNED_VLLM_VERSION}",
            ".vllmVersion",
        ),
    )


def _speculative(name: str) -> r.Ref:
    return r.Ref("self", ("speculative", name))


def _method_is(method: str) -> r.Expr:
    return r.Binary("==", _speculative("method"), r.lit(method))


def _only_in(condition: r.Expr, span: facts.Span) -> r.Expr:
    engine = r.Ref("self", ("engine",))
    return r.implies(
        r.all_of(r.Has(r.Ref("self", ("speculative",))), condition), version_in(span, engine)
    )


def spec_rules() -> tuple[r.Rule, ...]:
    """Rules on the rollout spec: methods, fields and values by release."""
    rules = []
    for method, reason in facts.NEVER_STARTS.items():
        rules.append(
            r.Rule(
                r.Not(r.all_of(r.Has(r.Ref("self", ("speculative",))), _method_is(method))),
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
            r.Rule(
                _only_in(r.Binary("==", _speculative("method"), r.lit(method)), method_facts.span),
                message,
                ".speculative.method",
            )
        )
    for field, span in facts.FIELDS.items():
        if field == "disable_by_batch_size":
            continue  # refused in every release (speculative_rules), with its replacement
        rules.append(
            r.Rule(
                _only_in(r.Has(_speculative(field)), span),
                f"speculative.{field} exists in {span.text()}",
                f".speculative.{field}",
                "FieldValueForbidden",
            )
        )
    for field, values in facts.FIELD_VALUES.items():
        for value, span in values.items():
            if span == facts.FIELDS[field]:
                continue
            present = r.all_of(
                r.Has(_speculative(field)), r.Binary("==", _speculative(field), r.lit(value))
            )
            rules.append(
                r.Rule(
                    _only_in(present, span),
                    f"speculative.{field} {value} exists in {span.text()}",
                    f".speculative.{field}",
                )
            )
    return tuple(rules)


def draft_fits_target_rules() -> tuple[r.Rule, ...]:
    """The draft's tensor parallelism and context against the target's."""
    draft_tp = _speculative("draft_tensor_parallel_size")
    draft_len = _speculative("max_model_len")
    target_len = r.Ref("self", ("model", "maxModelLen"))
    has_speculative = r.Has(r.Ref("self", ("speculative",)))
    return (
        r.Rule(
            r.implies(
                r.all_of(has_speculative, r.Has(draft_tp)),
                r.any_of(
                    r.Binary("==", draft_tp, r.lit(1)),
                    r.Binary("==", draft_tp, r.Ref("self", ("gpuPool", "tensorParallelSize"))),
                ),
            ),
            "speculative.draft_tensor_parallel_size must be 1 or gpuPool.tensorParallelSize",
            ".speculative.draft_tensor_parallel_size",
        ),
        r.Rule(
            r.implies(
                r.all_of(has_speculative, r.Has(draft_len), r.Has(target_len)),
                r.Binary("<=", draft_len, target_len),
            ),
            "speculative.max_model_len must be <= model.maxModelLen",
            ".speculative.max_model_len",
        ),
    )
