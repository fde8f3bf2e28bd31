"""The rules of `spec.speculative`, each written once (see `rules`), built from the facts.

Two sets: `CONFIG_RULES` hold for every vLLM release and sit on the speculative config
itself; `version_rules` need the release, so they sit on the object that has both
`engine` and `speculative` (the rollout spec). Where vLLM refuses the same thing at start,
the message quotes vLLM's; where the operator is stricter than vLLM (vLLM would ignore
the field or silently cap it), the message says so.
"""

from __future__ import annotations

from specdecode.api import vllm_versions as facts
from specdecode.api.rules import (
    Binary,
    Expr,
    Has,
    Index,
    Not,
    Ref,
    Rule,
    all_of,
    any_of,
    at,
    double,
    every,
    implies,
    lit,
    size,
    some,
)

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
SCHEDULE = "num_speculative_tokens_per_batch_size"


def _method_is(method: str) -> Expr:
    return Binary("==", at("method"), lit(method))


def _method_rules() -> list[Rule]:
    rules = []
    for method, method_facts in facts.METHODS.items():
        if method_facts.needs_model is True:
            rules.append(
                Rule(
                    implies(_method_is(method), Has(at("model"))),
                    f"speculative.model is required for method {method}",
                    ".model",
                    "FieldValueRequired",
                )
            )
        if method_facts.needs_model is False:
            rules.append(
                Rule(
                    implies(_method_is(method), Not(Has(at("model")))),
                    f"speculative.model must be empty for method {method}",
                    ".model",
                    "FieldValueForbidden",
                )
            )
    return rules


def _lookup_and_suffix_rules() -> list[Rule]:
    lookup_set = any_of(Has(at("prompt_lookup_min")), Has(at("prompt_lookup_max")))
    return [
        Rule(
            implies(lookup_set, Binary("in", at("method"), lit(list(LOOKUP_METHODS)))),
            "speculative.prompt_lookup_min/max apply to methods ngram and ngram_gpu only",
            None,
            "FieldValueForbidden",
        ),
        Rule(
            implies(
                all_of(Has(at("prompt_lookup_min")), Has(at("prompt_lookup_max"))),
                Binary("<=", at("prompt_lookup_min"), at("prompt_lookup_max")),
            ),
            "speculative.prompt_lookup_min must be <= prompt_lookup_max "
            "(vLLM: prompt_lookup_min=A must be <= prompt_lookup_max=B)",
            ".prompt_lookup_min",
        ),
        Rule(
            implies(any_of(*(Has(at(name)) for name in SUFFIX_FIELDS)), _method_is("suffix")),
            "speculative.suffix_decoding_* apply to method suffix only",
            None,
            "FieldValueForbidden",
        ),
    ]


def _drafting_rules() -> list[Rule]:
    return [
        Rule(
            Not(Has(at("disable_by_batch_size"))),
            "speculative.disable_by_batch_size never worked in vLLM's V1 engine and is gone "
            f"from 0.17: write {SCHEDULE} (vLLM 0.24+) with k = 0 for the batch sizes that "
            "should not speculate",
            ".disable_by_batch_size",
            "FieldValueForbidden",
        ),
        Rule(
            implies(
                all_of(Has(at("parallel_drafting")), at("parallel_drafting")),
                Binary("in", at("method"), lit(list(PARALLEL_DRAFTING_METHODS))),
            ),
            "speculative.parallel_drafting applies to methods "
            + ", ".join(PARALLEL_DRAFTING_METHODS)
            + " only (vLLM ignores it for the others)",
            ".parallel_drafting",
            "FieldValueForbidden",
        ),
    ]


def _synthetic_rules() -> list[Rule]:
    rates, length = at("synthetic_acceptance_rates"), at("synthetic_acceptance_length")
    k = at("num_speculative_tokens")
    synthetic = all_of(
        Has(at("rejection_sample_method")),
        Binary("==", at("rejection_sample_method"), lit("synthetic")),
    )
    later = lit(list(range(1, MAX_SPECULATIVE_TOKENS)))
    return [
        Rule(
            implies(any_of(Has(rates), Has(length)), synthetic),
            "speculative.synthetic_acceptance_rates / synthetic_acceptance_length are only "
            "valid with rejection_sample_method='synthetic'.",
            None,
            "FieldValueForbidden",
        ),
        Rule(
            implies(synthetic, Binary("!=", Has(rates), Has(length))),
            "speculative: rejection_sample_method='synthetic' requires exactly one of "
            "synthetic_acceptance_rates or synthetic_acceptance_length.",
        ),
        Rule(
            implies(Has(rates), Binary("==", size(rates), k)),
            "speculative.synthetic_acceptance_rates must have length num_speculative_tokens",
            ".synthetic_acceptance_rates",
        ),
        Rule(
            implies(
                Has(rates),
                every(
                    later,
                    "i",
                    implies(
                        Binary("<", Ref("i"), size(rates)),
                        Binary(
                            "<=",
                            Index(rates, Ref("i")),
                            Index(rates, Binary("-", Ref("i"), lit(1))),
                        ),
                    ),
                ),
            ),
            "speculative.synthetic_acceptance_rates must be non-increasing",
            ".synthetic_acceptance_rates",
        ),
        Rule(
            implies(
                Has(length),
                Binary("<=", length, Binary("+", double(k), lit(1.0))),
            ),
            "speculative.synthetic_acceptance_length must be in [1, num_speculative_tokens + 1]",
            ".synthetic_acceptance_length",
        ),
    ]


def _schedule_rules() -> list[Rule]:
    schedule = at(SCHEDULE)
    k = at("num_speculative_tokens")
    entry = Ref("e")
    indexes = lit(list(range(MAX_SCHEDULE_ENTRIES)))
    i, j = Ref("i"), Ref("j")
    sorted_disjoint = every(
        indexes,
        "i",
        every(
            indexes,
            "j",
            implies(
                all_of(Binary("<", i, j), Binary("<", j, size(schedule))),
                Binary("<", Index(Index(schedule, i), lit(1)), Index(Index(schedule, j), lit(0))),
            ),
        ),
    )
    where = f".{SCHEDULE}"
    name = f"speculative.{SCHEDULE}"
    return [
        Rule(
            implies(Has(schedule), every(schedule, "e", Binary(">=", entry[0], lit(1)))),
            f"{name}: batch-size ranges must be positive (vLLM: Batch-size range (start, end) "
            "must be positive.)",
            where,
        ),
        Rule(
            implies(Has(schedule), every(schedule, "e", Binary("<=", entry[0], entry[1]))),
            f"{name}: each range's start must be <= its end (vLLM: Batch-size range start "
            "must be <= end)",
            where,
        ),
        Rule(
            implies(Has(schedule), sorted_disjoint),
            f"{name}: ranges must be sorted and non-overlapping (vLLM: Batch-size ranges "
            "must be non-overlapping and sorted.)",
            where,
        ),
        Rule(
            implies(Has(schedule), some(schedule, "e", Binary("==", entry[0], lit(1)))),
            f"{name}: the first range must start at 1 (vLLM: The first batch-size range must "
            "start at 1 so every runtime batch size has a defined schedule.)",
            where,
        ),
        Rule(
            implies(Has(schedule), every(schedule, "e", Binary("<=", entry[2], k))),
            f"{name}: k must be <= num_speculative_tokens (vLLM would silently cap it)",
            where,
        ),
    ]


CONFIG_RULES: tuple[Rule, ...] = (
    *_method_rules(),
    *_lookup_and_suffix_rules(),
    *_drafting_rules(),
    *_synthetic_rules(),
    *_schedule_rules(),
)
