"""The rules of `spec.speculative`, each written once (see `rules`), built from the facts.

Two sets: `CONFIG_RULES` hold for every vLLM release and sit on the speculative config
itself; `version_rules` need the release, so they sit on the object that has both
`engine` and `speculative` (the rollout spec). Where vLLM refuses the same thing at start,
the message quotes vLLM's; where the operator is stricter than vLLM (vLLM would ignore
the field or silently cap it), the message says so.
"""

from __future__ import annotations

from specdecode.api import rules as r
from specdecode.api import vllm_versions as facts

# Re-exported: the wire spells it as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import SCHEDULE as SCHEDULE  # noqa: PLC0414

# Bounds the CRD needs for its CEL cost estimate; the index lists below cover them.
MAX_SPECULATIVE_TOKENS = 16
MAX_SCHEDULE_ENTRIES = 16
SUFFIX_FIELDS = (
    "suffix_decoding_max_tree_depth",
    "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor",
    "suffix_decoding_min_token_prob",
)
LOOKUP_METHODS = ("ngram", "ngram_gpu")
PARALLEL_DRAFTING_METHODS = ("eagle", "eagle3", "draft_model", "dflash", "dspark")


def _method_is(method: str) -> r.Expr:
    return r.Binary("==", r.at("method"), r.lit(method))


def _method_rules() -> list[r.Rule]:
    rules = []
    for method, method_facts in facts.METHODS.items():
        if method_facts.needs_model is True:
            rules.append(
                r.Rule(
                    r.implies(_method_is(method), r.Has(r.at("model"))),
                    f"speculative.model is required for method {method}",
                    ".model",
                    "FieldValueRequired",
                )
            )
        if method_facts.needs_model is False:
            rules.append(
                r.Rule(
                    r.implies(_method_is(method), r.Not(r.Has(r.at("model")))),
                    f"speculative.model must be empty for method {method}",
                    ".model",
                    "FieldValueForbidden",
                )
            )
    return rules


def _lookup_and_suffix_rules() -> list[r.Rule]:
    lookup_set = r.any_of(r.Has(r.at("prompt_lookup_min")), r.Has(r.at("prompt_lookup_max")))
    return [
        r.Rule(
            r.implies(lookup_set, r.Binary("in", r.at("method"), r.lit(list(LOOKUP_METHODS)))),
            "speculative.prompt_lookup_min/max apply to methods ngram and ngram_gpu only",
            None,
            "FieldValueForbidden",
        ),
        r.Rule(
            r.implies(
                r.all_of(r.Has(r.at("prompt_lookup_min")), r.Has(r.at("prompt_lookup_max"))),
                r.Binary("<=", r.at("prompt_lookup_min"), r.at("prompt_lookup_max")),
            ),
            "speculative.prompt_lookup_min must be <= prompt_lookup_max "
            "(vLLM: prompt_lookup_min=A must be <= prompt_lookup_max=B)",
            ".prompt_lookup_min",
        ),
        r.Rule(
            r.implies(
                r.any_of(*(r.Has(r.at(name)) for name in SUFFIX_FIELDS)), _method_is("suffix")
            ),
            "speculative.suffix_decoding_* apply to method suffix only",
            None,
            "FieldValueForbidden",
        ),
    ]


def _drafting_rules() -> list[r.Rule]:
    return [
        r.Rule(
            r.Not(r.Has(r.at("disable_by_batch_size"))),
            "speculative.disable_by_batch_size never worked in vLLM's V1 engine and is gone "
            f"from 0.17: write {SCHEDULE} (vLLM 0.24+) with k = 0 for the batch sizes that "
            "should not speculate",
            ".disable_by_batch_size",
            "FieldValueForbidden",
        ),
        r.Rule(
            r.implies(
                r.all_of(r.Has(r.at("parallel_drafting")), r.at("parallel_drafting")),
                r.Binary("in", r.at("method"), r.lit(list(PARALLEL_DRAFTING_METHODS))),
            ),
            "speculative.parallel_drafting applies to methods "
            + ", ".join(PARALLEL_DRAFTING_METHODS)
            + " only (vLLM ignores it for the others)",
            ".parallel_drafting",
            "FieldValueForbidden",
        ),
    ]


def _synthetic_rules() -> list[r.Rule]:
    rates, length = r.at("synthetic_acceptance_rates"), r.at("synthetic_acceptance_length")
    k = r.at("num_speculative_tokens")
    synthetic = r.all_of(
        r.Has(r.at("rejection_sample_method")),
        r.Binary("==", r.at("rejection_sample_method"), r.lit("synthetic")),
    )
    later = r.lit(list(range(1, MAX_SPECULATIVE_TOKENS)))
    return [
        r.Rule(
            r.implies(r.any_of(r.Has(rates), r.Has(length)), synthetic),
            "speculative.synthetic_acceptance_rates / synthetic_acceptance_length are only "
            "valid with rejection_sample_method='synthetic'.",
            None,
            "FieldValueForbidden",
        ),
        r.Rule(
            r.implies(synthetic, r.Binary("!=", r.Has(rates), r.Has(length))),
            "speculative: rejection_sample_method='synthetic' requires exactly one of "
            "synthetic_acceptance_rates or synthetic_acceptance_length.",
        ),
        r.Rule(
            r.implies(r.Has(rates), r.Binary("==", r.size(rates), k)),
            "speculative.synthetic_acceptance_rates must have length num_speculative_tokens",
            ".synthetic_acceptance_rates",
        ),
        r.Rule(
            r.implies(
                r.Has(rates),
                r.every(
                    later,
                    "i",
                    r.implies(
                        r.Binary("<", r.Ref("i"), r.size(rates)),
                        r.Binary(
                            "<=",
                            r.Index(rates, r.Ref("i")),
                            r.Index(rates, r.Binary("-", r.Ref("i"), r.lit(1))),
                        ),
                    ),
                ),
            ),
            "speculative.synthetic_acceptance_rates must be non-increasing",
            ".synthetic_acceptance_rates",
        ),
        r.Rule(
            r.implies(
                r.Has(length),
                r.Binary("<=", length, r.Binary("+", r.double(k), r.lit(1.0))),
            ),
            "speculative.synthetic_acceptance_length must be in [1, num_speculative_tokens + 1]",
            ".synthetic_acceptance_length",
        ),
    ]


def _schedule_rules() -> list[r.Rule]:
    schedule = r.at(SCHEDULE)
    k = r.at("num_speculative_tokens")
    entry = r.Ref("e")
    indexes = r.lit(list(range(MAX_SCHEDULE_ENTRIES)))
    i, j = r.Ref("i"), r.Ref("j")
    sorted_disjoint = r.every(
        indexes,
        "i",
        r.every(
            indexes,
            "j",
            r.implies(
                r.all_of(r.Binary("<", i, j), r.Binary("<", j, r.size(schedule))),
                r.Binary(
                    "<",
                    r.Index(r.Index(schedule, i), r.lit(1)),
                    r.Index(r.Index(schedule, j), r.lit(0)),
                ),
            ),
        ),
    )
    where = f".{SCHEDULE}"
    name = f"speculative.{SCHEDULE}"
    return [
        r.Rule(
            r.implies(r.Has(schedule), r.every(schedule, "e", r.Binary(">=", entry[0], r.lit(1)))),
            f"{name}: batch-size ranges must be positive (vLLM: Batch-size range (start, end) "
            "must be positive.)",
            where,
        ),
        r.Rule(
            r.implies(r.Has(schedule), r.every(schedule, "e", r.Binary("<=", entry[0], entry[1]))),
            f"{name}: each range's start must be <= its end (vLLM: Batch-size range start "
            "must be <= end)",
            where,
        ),
        r.Rule(
            r.implies(r.Has(schedule), sorted_disjoint),
            f"{name}: ranges must be sorted and non-overlapping (vLLM: Batch-size ranges "
            "must be non-overlapping and sorted.)",
            where,
        ),
        r.Rule(
            r.implies(r.Has(schedule), r.some(schedule, "e", r.Binary("==", entry[0], r.lit(1)))),
            f"{name}: the first range must start at 1 (vLLM: The first batch-size range must "
            "start at 1 so every runtime batch size has a defined schedule.)",
            where,
        ),
        r.Rule(
            r.implies(r.Has(schedule), r.every(schedule, "e", r.Binary("<=", entry[2], k))),
            f"{name}: k must be <= num_speculative_tokens (vLLM would silently cap it)",
            where,
        ),
    ]


CONFIG_RULES: tuple[r.Rule, ...] = (
    *_method_rules(),
    *_lookup_and_suffix_rules(),
    *_drafting_rules(),
    *_synthetic_rules(),
    *_schedule_rules(),
)
