"""`spec.speculative`: vLLM's `--speculative-config`, field for field.

The keys are vLLM's own (snake_case), so a user can paste the JSON they already run with
`vllm serve`, and the operator passes it through unchanged. vLLM rejects unknown keys from
0.16 on, so this model does too. Cross-field rules that the API server can check live in
`x-kubernetes-validations` (see `crdgen`); `validate_speculative` repeats them in Python so
the operator never renders an engine that would exit at start.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Annotated

from pydantic import Field, model_validator

from specdecode.api.base import VerbatimModel


class SpeculativeMethod(StrEnum):
    """Speculative methods the pinned vLLM version accepts."""

    EAGLE = "eagle"
    EAGLE3 = "eagle3"
    DRAFT_MODEL = "draft_model"
    MTP = "mtp"
    NGRAM = "ngram"
    SUFFIX = "suffix"


METHODS_NEEDING_DRAFT_MODEL = frozenset(
    {SpeculativeMethod.EAGLE, SpeculativeMethod.EAGLE3, SpeculativeMethod.DRAFT_MODEL}
)
METHODS_WITHOUT_DRAFT_MODEL = frozenset(
    {SpeculativeMethod.NGRAM, SpeculativeMethod.SUFFIX, SpeculativeMethod.MTP}
)

PositiveInt = Annotated[int, Field(ge=1)]


class SpeculativeConfig(VerbatimModel):
    """The speculative-decoding config, exactly as vLLM's `--speculative-config` JSON."""

    method: SpeculativeMethod = Field(
        description="Drafting method: eagle3, eagle, draft_model, mtp, ngram or suffix."
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="Draft model or head (hub id or path). Required for eagle, eagle3 and "
        "draft_model; must be empty for ngram, suffix and mtp.",
    )
    num_speculative_tokens: int = Field(
        ge=1,
        le=16,
        description="Tokens drafted per step (k). vLLM requires k > 0.",
    )
    draft_tensor_parallel_size: PositiveInt | None = Field(
        default=None,
        description="Tensor parallel size of the draft: 1 or the target's tensor parallel size.",
    )
    quantization: str | None = Field(
        default=None, max_length=64, description="Quantization method of the draft model."
    )
    max_model_len: PositiveInt | None = Field(
        default=None,
        description="Maximum context of the draft; at most the target's maxModelLen.",
    )
    revision: str | None = Field(
        default=None, max_length=128, description="Revision of the draft model."
    )
    code_revision: str | None = Field(
        default=None, max_length=128, description="Code revision of the draft model."
    )
    prompt_lookup_max: PositiveInt | None = Field(
        default=None, description="ngram only: longest n-gram to match (default 5)."
    )
    prompt_lookup_min: PositiveInt | None = Field(
        default=None, description="ngram only: shortest n-gram to match; <= prompt_lookup_max."
    )
    disable_padded_drafter_batch: bool | None = Field(
        default=None, description="Disable input padding for the drafter (vLLM option)."
    )
    enforce_eager: bool | None = Field(
        default=None, description="Run the draft model without CUDA graphs."
    )
    speculative_token_tree: str | None = Field(
        default=None, max_length=4096, description="Token tree for tree-based drafting."
    )
    suffix_decoding_max_tree_depth: PositiveInt | None = Field(
        default=None, description="suffix only: maximum tree depth (vLLM default 24)."
    )
    suffix_decoding_max_cached_requests: int | None = Field(
        default=None, ge=0, description="suffix only: cached requests (vLLM default 10000)."
    )
    suffix_decoding_max_spec_factor: float | None = Field(
        default=None, gt=0, description="suffix only: max speculative factor (default 1.0)."
    )
    suffix_decoding_min_token_prob: float | None = Field(
        default=None, ge=0, le=1, description="suffix only: min token probability (0.1)."
    )

    @model_validator(mode="after")
    def _cross_field_rules(self) -> SpeculativeConfig:
        problems = speculative_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def to_cli_json(self) -> str:
        """The exact `--speculative-config` argument: compact, keys sorted, no nulls."""
        return json.dumps(self.to_wire(), sort_keys=True, separators=(",", ":"))

    def fingerprint(self) -> str:
        """A short stable hash that names this config in labels and status."""
        return hashlib.sha256(self.to_cli_json().encode()).hexdigest()[:10]


NO_SPECULATION = "none"


def fingerprint_of(config: SpeculativeConfig | None) -> str:
    """A config's fingerprint, as labels and status name it; plain decoding is "none"."""
    return NO_SPECULATION if config is None else config.fingerprint()


def speculative_problems(config: SpeculativeConfig) -> list[str]:
    """Cross-field rules vLLM enforces at start, as messages that name the field."""
    problems: list[str] = []
    method = config.method
    if method in METHODS_NEEDING_DRAFT_MODEL and not config.model:
        problems.append(f"speculative.model is required for method {method.value}")
    if method in METHODS_WITHOUT_DRAFT_MODEL and config.model:
        problems.append(f"speculative.model must be empty for method {method.value}")
    lookup_set = config.prompt_lookup_max is not None or config.prompt_lookup_min is not None
    if lookup_set and method is not SpeculativeMethod.NGRAM:
        problems.append("speculative.prompt_lookup_min/max apply to method ngram only")
    if (
        config.prompt_lookup_max is not None
        and config.prompt_lookup_min is not None
        and config.prompt_lookup_min > config.prompt_lookup_max
    ):
        problems.append("speculative.prompt_lookup_min must be <= prompt_lookup_max")
    suffix_set = any(
        value is not None
        for value in (
            config.suffix_decoding_max_tree_depth,
            config.suffix_decoding_max_cached_requests,
            config.suffix_decoding_max_spec_factor,
            config.suffix_decoding_min_token_prob,
        )
    )
    if suffix_set and method is not SpeculativeMethod.SUFFIX:
        problems.append("speculative.suffix_decoding_* apply to method suffix only")
    return problems
