"""`--speculative-config` validation, following the imitated release's SpeculativeConfig.

Same field names, types and constraints as vLLM's pydantic dataclass (so pydantic
produces the same error text), then the same post-init rules: method aliases, which
methods need a draft `model`, n-gram window defaults and ordering, suffix ranges,
draft tensor-parallel size, draft max_model_len, EAGLE-3 target families, the synthetic
acceptance rules (0.20+) and the per-batch-size schedule (0.24+). What differs between
releases (which methods, fields and values exist; unknown keys dropped up to 0.15 and
refused from 0.16; draft_model from 0.15) comes from releases.py and is checked first
(specprecheck.py). Things vLLM learns from the draft model's HF config (n_predict,
model_type) are assumed from the method instead.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass as plain_dataclass
from typing import Any

from pydantic import Field, SkipValidation, ValidationError
from pydantic.dataclasses import dataclass

from specdecode_sim.releases import (
    MTP_ALIASES,
    NEVER_STARTS,
    PINNED_VLLM_VERSION,
    Release,
    parse_release,
)
from specdecode_sim.specprecheck import check_release_fields
from specdecode_sim.specrules import check_schedule, check_synthetic

MODEL_BASED = ("eagle", "eagle3", "medusa", "mlp_speculator", "mtp", "draft_model", "dflash")
EAGLE3_TARGET_FAMILIES = ("llama", "qwen", "minicpm", "gpt_oss")
DRAFT_MODEL_UNSUPPORTED = (
    "Draft model speculative decoding is not supported yet. Please consider using "
    "other speculative decoding methods such as ngram, medusa, eagle, or mtp."
)


@plain_dataclass(frozen=True)
class TargetModel:
    """What the speculative config is checked against (vLLM's target model/parallel config)."""

    model: str
    model_type: str
    tensor_parallel_size: int
    max_model_len: int


@dataclass
class SpeculativeConfig:
    """Mirror of vLLM's SpeculativeConfig fields; validation happens on construction."""

    enforce_eager: bool | None = None
    num_speculative_tokens: int = Field(default=None, gt=0)  # type: ignore[assignment]
    model: str | None = None
    method: str | None = None  # the release's Literal is checked in specprecheck.py
    draft_tensor_parallel_size: int | None = Field(default=None, ge=1)
    quantization: str | None = None
    max_model_len: int | None = Field(default=None, ge=1)
    revision: str | None = None
    code_revision: str | None = None
    disable_by_batch_size: int | None = Field(default=None, ge=2)
    disable_padded_drafter_batch: bool = False
    prompt_lookup_max: int | None = Field(default=None, ge=1)
    prompt_lookup_min: int | None = Field(default=None, ge=1)
    speculative_token_tree: str | None = None
    target: SkipValidation[TargetModel] = None  # type: ignore[assignment]
    suffix_decoding_max_tree_depth: int = 24
    suffix_decoding_max_cached_requests: int = 10000
    suffix_decoding_max_spec_factor: float = 1.0
    suffix_decoding_min_token_prob: float = 0.1
    # Fields of later releases (absent keys when the release lacks them: precheck).
    parallel_drafting: bool = False
    rejection_sample_method: str | None = None
    synthetic_acceptance_rates: list[float] | None = None
    synthetic_acceptance_length: float | None = None
    draft_sample_method: str | None = None
    num_speculative_tokens_per_batch_size: list[tuple[int, int, int]] | None = None
    release: SkipValidation[Release] = None  # type: ignore[assignment]
    ignored_keys: SkipValidation[tuple[str, ...]] = ()  # dropped silently (0.11-0.15)

    def __post_init__(self) -> None:
        """vLLM's post-init: resolve the method and check method-specific rules."""
        if self.method in MTP_ALIASES:
            self.method = "mtp"
        if self.model is None and self.num_speculative_tokens is not None:
            if self.method in ("mtp", "dspark"):  # dspark: weights inside the target
                self.model = self.target.model
            elif self.method in ("ngram", "[ngram]", "ngram_gpu"):
                self.model = "ngram"
            elif self.method == "suffix":
                self.model = "suffix"
            else:
                raise ValueError(
                    "num_speculative_tokens was provided but without speculative model."
                )
        if self.method is None and self.model in ("ngram", "[ngram]"):
            self.method = "ngram"
        if self.method in ("ngram", "ngram_gpu"):
            self._resolve_ngram_window()
        elif self.method == "suffix":
            self._validate_suffix()
        else:
            self.prompt_lookup_max = 0
            self.prompt_lookup_min = 0
            if self.model is not None:
                self._resolve_model_based()
        self._verify_args()

    def _resolve_ngram_window(self) -> None:
        if self.prompt_lookup_min is None and self.prompt_lookup_max is None:
            self.prompt_lookup_min = self.prompt_lookup_max = 5
        elif self.prompt_lookup_min is None:
            self.prompt_lookup_min = self.prompt_lookup_max
        elif self.prompt_lookup_max is None:
            self.prompt_lookup_max = self.prompt_lookup_min
        assert self.prompt_lookup_min is not None and self.prompt_lookup_max is not None
        if self.prompt_lookup_min > self.prompt_lookup_max:
            raise ValueError(
                f"prompt_lookup_min={self.prompt_lookup_min} must "
                f"be <= prompt_lookup_max={self.prompt_lookup_max}"
            )

    def _validate_suffix(self) -> None:
        if self.num_speculative_tokens is None:
            self.num_speculative_tokens = self.suffix_decoding_max_tree_depth
        if self.suffix_decoding_max_tree_depth < 1:
            raise ValueError(
                f"suffix_decoding_max_tree_depth={self.suffix_decoding_max_tree_depth} must be >= 1"
            )
        if self.suffix_decoding_max_cached_requests < 0:
            raise ValueError(
                "suffix_decoding_max_cached_requests="
                f"{self.suffix_decoding_max_cached_requests} must be >= 0"
            )
        if self.suffix_decoding_max_spec_factor < 0:
            raise ValueError(
                "suffix_decoding_max_spec_factor="
                f"{self.suffix_decoding_max_spec_factor} must be >= 0"
            )
        if not 0 <= self.suffix_decoding_min_token_prob <= 1:
            raise ValueError(
                f"suffix_decoding_min_token_prob={self.suffix_decoding_min_token_prob} "
                "must be in [0, 1]"
            )

    def _resolve_model_based(self) -> None:
        assert self.model is not None
        lowered = self.model.lower()
        if self.method in (*MODEL_BASED, "dspark"):
            pass
        elif "eagle-" in lowered:
            self.method = "eagle"
        elif "eagle3" in lowered:
            self.method = "eagle3"
        else:
            self.method = "draft_model"
            if self.release.runs_draft_model:
                return self._resolve_model_based()
            raise NotImplementedError(
                "Speculative decoding with draft model is not supported yet. Please consider "
                "using other speculative decoding methods such as ngram, medusa, eagle, or mtp."
            )
        if self.num_speculative_tokens is None and self.method == "mtp":
            self.num_speculative_tokens = 1
        if self.speculative_token_tree is not None:
            ast.literal_eval(self.speculative_token_tree)
        draft_tp = self.draft_tensor_parallel_size
        if draft_tp is not None and draft_tp not in (1, self.target.tensor_parallel_size):
            raise ValueError(
                f"speculative_draft_tensor_parallel_size={draft_tp} cannot be "
                "other value than 1 or target model tensor_parallel_size"
            )
        if self.max_model_len is not None and self.max_model_len > self.target.max_model_len:
            raise ValueError(
                f"speculative_max_model_len={self.max_model_len} cannot be larger than "
                f"target_max_model_len={self.target.max_model_len}"
            )

    def _verify_args(self) -> None:
        if self.num_speculative_tokens is None:
            raise ValueError(
                "num_speculative_tokens must be provided with speculative model unless the "
                "draft model config contains an n_predict parameter."
            )
        if self.method == "eagle3" and not any(
            family in self.target.model_type for family in EAGLE3_TARGET_FAMILIES
        ):
            raise ValueError(
                f"Eagle3 is only supported for {list(EAGLE3_TARGET_FAMILIES)} models. "
                f"Got self.target_model_config.hf_text_config.model_type="
                f"'{self.target.model_type}'"
            )
        check_synthetic(
            self.rejection_sample_method,
            self.synthetic_acceptance_rates,
            self.synthetic_acceptance_length,
            self.num_speculative_tokens,
        )
        if self.num_speculative_tokens_per_batch_size is not None:
            self.num_speculative_tokens_per_batch_size = check_schedule(
                self.num_speculative_tokens_per_batch_size, self.num_speculative_tokens
            )


class SpeculativeConfigError(Exception):
    """A config vLLM would refuse at start; `rendered` is what goes to stderr."""

    def __init__(self, rendered: str) -> None:
        super().__init__(rendered)
        self.rendered = rendered


def build_speculative_config(
    raw: Any, target: TargetModel, release: Release | None = None
) -> SpeculativeConfig | None:
    """Validate the parsed `--speculative-config` JSON the way `vllm serve` of `release`
    does at start. Keys the release does not know and drops silently (up to 0.15) are
    listed in the result's `ignored_keys`."""
    if raw is None:
        return None
    release = release or parse_release(PINNED_VLLM_VERSION)
    if not isinstance(raw, dict):
        raise SpeculativeConfigError(
            "TypeError: vllm.config.speculative.SpeculativeConfig() argument after ** "
            f"must be a mapping, not {type(raw).__name__}"
        )
    kept, ignored, refusal = check_release_fields(raw, release, _FIELD_NAMES)
    if refusal is not None:
        raise SpeculativeConfigError(refusal)
    if kept.get("method") == "draft_model" and not release.runs_draft_model:
        raise SpeculativeConfigError(f"NotImplementedError: {DRAFT_MODEL_UNSUPPORTED}")
    if kept.get("model") and kept.get("method") in NEVER_STARTS:
        raise SpeculativeConfigError(
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for "
            f"SpeculativeConfig\n  Value error, {NEVER_STARTS[kept['method']]}"
        )
    try:
        return SpeculativeConfig(
            **{**kept, "target": target, "release": release, "ignored_keys": tuple(ignored)}
        )
    except ValidationError as error:
        raise SpeculativeConfigError(
            f"pydantic_core._pydantic_core.ValidationError: {error}"
        ) from error
    except (NotImplementedError, ValueError, SyntaxError, TypeError) as error:
        raise SpeculativeConfigError(f"{type(error).__name__}: {error}") from error


_FIELD_NAMES = frozenset(SpeculativeConfig.__dataclass_fields__) - {
    "target",
    "release",
    "ignored_keys",
}
