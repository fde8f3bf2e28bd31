"""`spec.speculative`: vLLM's `--speculative-config`, field for field.

The keys are vLLM's own (snake_case), so a user can paste the JSON they already run with
`vllm serve`, and the operator passes it through unchanged. The model is the union over
the supported vLLM releases (0.11.2 to 0.33.x, `vllm_versions`); what a given release
has is checked on the rollout spec, which knows the release (`version_rules`). Unknown
keys are refused, as vLLM does from 0.16 on. Cross-field rules are written once in
`speculative_rules` and checked here and, as CEL, by the API server.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, model_validator

from specdecode.api.base import VerbatimModel, optional
from specdecode.api.rules import RuleSet
from specdecode.api.speculative_rules import (
    CONFIG_RULES,
    MAX_SCHEDULE_ENTRIES,
    MAX_SPECULATIVE_TOKENS,
)
from specdecode.speculative_document import cli_json, document_fingerprint

# Re-exported: one function names a config, the wire's and the domain's alike.
from specdecode.speculative_document import fingerprint_of as fingerprint_of  # noqa: PLC0414
from specdecode.vocabulary import NO_SPECULATION as NO_SPECULATION  # noqa: PLC0414

# Re-exported: the wire spells it as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import SpeculativeMethod as SpeculativeMethod  # noqa: PLC0414


class RejectionSampleMethod(StrEnum):
    """`rejection_sample_method` values (0.18-0.20: strict, probabilistic; 0.21+:
    standard; synthetic 0.20+ as the operator models it; block 0.25+)."""

    STRICT = "strict"
    PROBABILISTIC = "probabilistic"
    STANDARD = "standard"
    SYNTHETIC = "synthetic"
    BLOCK = "block"


class DraftSampleMethod(StrEnum):
    """`draft_sample_method` values (greedy 0.21+, gumbel 0.21 only, probabilistic 0.22+)."""

    GREEDY = "greedy"
    GUMBEL = "gumbel"
    PROBABILISTIC = "probabilistic"


PositiveInt = Annotated[int, Field(ge=1)]
Probability = Annotated[float, Field(ge=0, le=1)]
ScheduleEntry = Annotated[
    list[Annotated[int, Field(ge=0)]],
    Field(min_length=3, max_length=3),
]
RULES = RuleSet(CONFIG_RULES)


class SpeculativeConfig(VerbatimModel):
    """The speculative-decoding config, exactly as vLLM's `--speculative-config` JSON."""

    method: SpeculativeMethod = Field(
        description="Drafting method: eagle3, eagle, draft_model (0.15+), mtp, ngram, "
        "ngram_gpu (0.18+), suffix, dflash (0.20+), dspark (0.25+), medusa (to 0.32); "
        "mlp_speculator is refused (no vLLM V1 release can start it)."
    )
    model: str | None = optional(
        "Draft model or head (hub id or path). Required for eagle, eagle3, "
        "draft_model, dflash, medusa and mlp_speculator; must be empty for ngram, "
        "ngram_gpu, suffix and mtp.",
        min_length=1,
        max_length=256,
    )
    num_speculative_tokens: int = Field(
        ge=1,
        le=MAX_SPECULATIVE_TOKENS,
        description="Tokens drafted per step (k). vLLM requires k > 0.",
    )
    draft_tensor_parallel_size: PositiveInt | None = optional(
        "Tensor parallel size of the draft: 1 or the target's tensor parallel size."
    )
    quantization: str | None = optional("Quantization method of the draft model.", max_length=64)
    max_model_len: PositiveInt | None = optional(
        "Maximum context of the draft; at most the target's maxModelLen."
    )
    revision: str | None = optional("Revision of the draft model.", max_length=128)
    code_revision: str | None = optional("Code revision of the draft model.", max_length=128)
    prompt_lookup_max: PositiveInt | None = optional(
        "ngram, ngram_gpu: longest n-gram to match (default 5)."
    )
    prompt_lookup_min: PositiveInt | None = optional(
        "ngram, ngram_gpu: shortest n-gram to match; <= prompt_lookup_max."
    )
    disable_padded_drafter_batch: bool | None = optional(
        "Disable input padding for the drafter (vLLM option)."
    )
    enforce_eager: bool | None = optional("Run the draft model without CUDA graphs.")
    speculative_token_tree: str | None = optional(
        "Token tree for tree-based drafting (vLLM 0.11 to 0.20; removed).", max_length=4096
    )
    disable_by_batch_size: int | None = optional(
        "Refused: it never worked in vLLM's V1 engine and is gone from 0.17; "
        "use num_speculative_tokens_per_batch_size."
    )
    parallel_drafting: bool | None = optional(
        "Draft all k tokens in one pass (0.16+; eagle, eagle3, draft_model, "
        "dflash, dspark; the draft must be trained for it)."
    )
    num_speculative_tokens_per_batch_size: list[ScheduleEntry] | None = optional(
        "Dynamic speculative decoding (0.24+): [start, end, k] inclusive "
        "batch-size ranges, sorted, non-overlapping, the first starting at 1; k = 0 turns "
        "speculation off in that range; k <= num_speculative_tokens.",
        min_length=1,
        max_length=MAX_SCHEDULE_ENTRIES,
    )
    rejection_sample_method: RejectionSampleMethod | None = optional(
        "Verification (0.18+): standard (0.21+; strict/probabilistic before), "
        "synthetic (0.20+: accept at a chosen rate, to test a real engine at a known "
        "alpha), block (0.25+)."
    )
    synthetic_acceptance_rates: (
        Annotated[list[Probability], Field(max_length=MAX_SPECULATIVE_TOKENS)] | None
    ) = optional(
        "synthetic only (0.20+): per position, P(first i+1 drafts accepted); "
        "k entries, non-increasing."
    )
    synthetic_acceptance_length: float | None = optional(
        "synthetic only (0.20+): mean acceptance length in [1, k + 1].", ge=1
    )
    draft_sample_method: DraftSampleMethod | None = optional(
        "How the draft samples (0.21+): greedy, probabilistic (0.22+)."
    )
    suffix_decoding_max_tree_depth: PositiveInt | None = optional(
        "suffix only: maximum tree depth (vLLM default 24)."
    )
    suffix_decoding_max_cached_requests: int | None = optional(
        "suffix only: cached requests (vLLM default 10000).", ge=0
    )
    suffix_decoding_max_spec_factor: float | None = optional(
        "suffix only: max speculative factor (default 1.0).", gt=0
    )
    suffix_decoding_min_token_prob: float | None = optional(
        "suffix only: min token probability (0.1).", ge=0, le=1
    )

    @model_validator(mode="after")
    def _cross_field_rules(self) -> SpeculativeConfig:
        problems = RULES.violations(self.to_wire())
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def to_cli_json(self) -> str:
        """The exact `--speculative-config` argument: compact, keys sorted, no nulls."""
        return cli_json(self.to_wire())

    def fingerprint(self) -> str:
        """A short stable hash that names this config in labels and status (the domain's
        `SpeculativeSetting` hashes by the same function)."""
        return document_fingerprint(self.to_wire())
