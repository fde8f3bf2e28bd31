"""The vLLM release the simulator imitates, and what differs between releases 0.11.2-0.33.x.

The operator keeps these facts in operator/specdecode/api/vllm_versions.py (read from
vLLM's wheels). The simulator image ships only this package (no operator code, and
`specdecode.api` imports pydantic models on import), so the few facts it needs are
copied here; tests/unit/sim/test_version_pins.py loads the operator's module by file
path and fails when the two tables drift. One code path reads this table: there are no
per-release copies of the validation or the metrics.

One deliberate difference: vLLM 0.19 accepts `rejection_sample_method: synthetic` (with
a single `synthetic_acceptance_rate`, not modelled); the operator never asks for it there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

PINNED_VLLM_VERSION = "0.33.0"  # engine-image/VLLM_VERSION (checked by a unit test)
VERSION_ENV = "SPECDECODE_VLLM_VERSION"
IMAGE_VERSION_ENV = "SPECDECODE_SIM_IMAGE_VLLM_VERSION"
OLDEST_SUPPORTED = (0, 11, 2)
NEWEST_MINOR = 33
SUPPORTED_RANGE_TEXT = "0.11.2 to 0.33.x"


@dataclass(frozen=True)
class Span:
    """Inclusive range of 0.x minor releases."""

    first: int
    last: int = NEWEST_MINOR

    def __contains__(self, minor: object) -> bool:
        return isinstance(minor, int) and self.first <= minor <= self.last


ALL = Span(11)

# `method` values per release (SpeculativeMethod Literal). The MTP aliases are accepted
# everywhere and renamed to mtp. draft_model is in the Literal from 0.11 but raises
# NotImplementedError at start up to 0.14 (DRAFT_MODEL_RUNS).
METHODS: dict[str, Span] = {
    "ngram": ALL,
    "medusa": Span(11, 32),
    "mlp_speculator": Span(11, 32),
    "draft_model": ALL,
    "suffix": ALL,
    "eagle": ALL,
    "eagle3": ALL,
    "mtp": ALL,
    "ngram_gpu": Span(18),
    "dflash": Span(20),
    "dspark": Span(25),
}
# In the Literal, yet V1's model registry has no MLPSpeculator: the draft's ModelConfig fails
# at start-up in every release (the operator's vllm_versions.NEVER_STARTS).
NEVER_STARTS: dict[str, str] = {
    "mlp_speculator": "Model architectures ['MLPSpeculatorPreTrainedModel'] are not supported "
    "for now.",
}
MTP_ALIASES = (
    "deepseek_mtp",
    "mimo_mtp",
    "glm4_moe_mtp",
    "ernie_mtp",
    "qwen3_next_mtp",
    "longcat_flash_mtp",
    "pangu_ultra_moe_mtp",
)
DRAFT_MODEL_RUNS = Span(15)

# SpeculativeConfig fields that not every release has (the others exist in all).
FIELDS: dict[str, Span] = {
    "disable_by_batch_size": Span(11, 16),
    "parallel_drafting": Span(16),
    "rejection_sample_method": Span(18),
    "synthetic_acceptance_rates": Span(20),
    "synthetic_acceptance_length": Span(20),
    "speculative_token_tree": Span(11, 20),
    "draft_sample_method": Span(21),
    "num_speculative_tokens_per_batch_size": Span(24),
}
FIELD_VALUES: dict[str, dict[str, Span]] = {
    "rejection_sample_method": {
        "strict": Span(18, 20),
        "probabilistic": Span(18, 20),
        "synthetic": Span(19),  # the operator's table says 20: see the module docstring
        "standard": Span(21),
        "block": Span(25),
    },
    "draft_sample_method": {
        "greedy": Span(21),
        "gumbel": Span(21, 21),
        "probabilistic": Span(22),
    },
}
# Up to 0.15 unknown keys are dropped silently; from 0.16 `extra="forbid"` refuses them.
UNKNOWN_KEYS_REJECTED = Span(16)
# vllm:time_per_output_token_seconds (deprecated alias of inter_token_latency_seconds).
TIME_PER_OUTPUT_TOKEN_METRIC = Span(11, 14)
# vllm:request_success_total's finished_reason values per release (FINISH_REASON_STRINGS).
FINISH_REASONS: dict[str, Span] = {
    "stop": ALL,
    "length": ALL,
    "abort": ALL,
    "error": Span(13),
    "repetition": Span(17),
}


class ReleaseError(ValueError):
    """SPECDECODE_VLLM_VERSION names no release the simulator (and operator) supports."""


# Request errors as vLLM 0.32.0 words them (measured: tests/data/vllm-0.32.0-contract.json):
# an unknown model lists the served names with `param: "model"`; max_tokens above
# max_model_len is refused as such (vllm/renderers/params.py) with the parameter and value.
# Older releases keep 0.11.2's wording; the release between that changed it is not checked.
REQUEST_ERRORS_WITH_PARAM = Span(32)
# Streamed chunks as 0.32.0 sends them (measured, same file): per-chunk usage without
# `prompt_tokens_details` (chat: with `completion_tokens_details: null`), `prompt_text: null`
# on the chat role chunk, `system_fingerprint` on the final usage chunk. Older releases keep
# the 0.11.2 shapes; the release between that changed them is not checked.
STREAM_FORMAT_0_32 = Span(32)


@dataclass(frozen=True)
class Release:
    """One imitated vLLM release: its version string and 0.x minor."""

    version: str
    minor: int

    def methods(self) -> tuple[str, ...]:
        """`method` values this release's SpeculativeConfig accepts (Literal order)."""
        return tuple(name for name, span in METHODS.items() if self.minor in span)

    def has_field(self, name: str) -> bool:
        """Whether this release's SpeculativeConfig has the field."""
        return self.minor in FIELDS.get(name, ALL)

    def values_of(self, name: str) -> tuple[str, ...]:
        """Literal values of an enum-like field in this release."""
        return tuple(value for value, span in FIELD_VALUES[name].items() if self.minor in span)

    @property
    def rejects_unknown_keys(self) -> bool:
        """0.16+ refuses unknown `--speculative-config` keys; older releases drop them."""
        return self.minor in UNKNOWN_KEYS_REJECTED

    @property
    def request_errors_with_param(self) -> bool:
        """Whether request errors name the parameter (0.32+, REQUEST_ERRORS_WITH_PARAM)."""
        return self.minor in REQUEST_ERRORS_WITH_PARAM

    @property
    def streams_as_0_32(self) -> bool:
        """Whether streamed chunks take 0.32's shapes (STREAM_FORMAT_0_32)."""
        return self.minor in STREAM_FORMAT_0_32

    @property
    def runs_draft_model(self) -> bool:
        """Whether `method: draft_model` starts (0.15+)."""
        return self.minor in DRAFT_MODEL_RUNS

    @property
    def finish_reasons(self) -> tuple[str, ...]:
        """The `finished_reason`s vllm:request_success_total carries in this release."""
        return tuple(reason for reason, span in FINISH_REASONS.items() if self.minor in span)

    @property
    def exports_time_per_output_token(self) -> bool:
        """Whether /metrics still carries vllm:time_per_output_token_seconds (up to 0.14)."""
        return self.minor in TIME_PER_OUTPUT_TOKEN_METRIC


def parse_release(version: str) -> Release:
    """The release for a version string, or ReleaseError naming the supported range."""
    if re.fullmatch(r"[0-9]+[.][0-9]+[.][0-9]+", version) is None:
        raise ReleaseError(
            f"{VERSION_ENV}={version!r} is not a vLLM version (expected e.g. "
            f"{PINNED_VLLM_VERSION}); supported: {SUPPORTED_RANGE_TEXT}"
        )
    major, minor, patch = (int(part) for part in version.split("."))
    if (major, minor, patch) < OLDEST_SUPPORTED or (major, minor) > (0, NEWEST_MINOR):
        raise ReleaseError(
            f"{VERSION_ENV}={version} is outside the supported vLLM releases "
            f"({SUPPORTED_RANGE_TEXT})"
        )
    return Release(version, minor)


def release_from_env(environ: Mapping[str, str]) -> Release:
    """The release this engine is: SPECDECODE_SIM_IMAGE_VLLM_VERSION, else
    SPECDECODE_VLLM_VERSION (set by the operator on every engine pod), else the pin.

    Why the first: a real image is the release it was built from, whatever a rollout
    declares; the simulator otherwise becomes what the operator declares, so an image whose
    tag and contents disagree (the case the operator's /version check exists for) needs
    its own knob.
    """
    raw = environ.get(IMAGE_VERSION_ENV, "").strip() or environ.get(VERSION_ENV, "").strip()
    return parse_release(raw or PINNED_VLLM_VERSION)


def every_supported_release() -> list[Release]:
    """One release per supported minor (0.11.2, 0.12.0, ..., 0.33.0), for tests."""
    return [parse_release("0.11.2")] + [
        parse_release(f"0.{minor}.0") for minor in range(12, NEWEST_MINOR + 1)
    ]
