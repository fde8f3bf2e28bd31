"""What each supported vLLM release accepts in `--speculative-config`, and what it exposes.

Pure data and stdlib only, so the models, the CRD generator and the simulator read the same
facts; every fact was read from vLLM's own wheels (the files are named beside each table;
the list: docs/internals.md). Spans are inclusive minor releases, 0.11.2 the oldest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The release the engine image pins (engine-image/VLLM_VERSION) and the version a rollout
# runs when neither spec.engine.vllmVersion nor the image tag names one.
PINNED_VLLM_VERSION = "0.33.0"
OLDEST_SUPPORTED = (0, 11, 2)
NEWEST_MINOR = 33  # any 0.33.x patch is supported
SUPPORTED_RANGE_TEXT = "0.11.2 to 0.33.x"

# A version as `vllm --version` and GET /version print it, and as spec.engine.vllmVersion
# takes it.
VERSION_PATTERN = r"^[0-9]+[.][0-9]+[.][0-9]+$"
# A vLLM version in an image tag: `vllm/vllm-openai:v0.33.0`, `...vllm-sim:v0.11.2`,
# `...:v0.20.2-cu128`, optionally pinned by digest. Only a major-0 `v`-tag counts, so a
# custom image tagged `1.2.0` is not read as a vLLM release.
# (Regexes use `[.]`, not a backslash, so they go into CEL string literals unchanged.)
IMAGE_TAG_SUFFIX = r"([-+][A-Za-z0-9_.-]*)?(@sha256:[a-f0-9]{64})?$"
IMAGE_TAG_VERSION = r":v(0[.][0-9]+[.][0-9]+)" + IMAGE_TAG_SUFFIX


@dataclass(frozen=True)
class Span:
    """Inclusive range of 0.x minor releases (0.11 to 0.33 is Span(11, 33))."""

    first: int
    last: int = NEWEST_MINOR

    def __contains__(self, minor: object) -> bool:
        return isinstance(minor, int) and self.first <= minor <= self.last

    def text(self) -> str:
        """How messages name the releases: "vLLM 0.16 to 0.33", "vLLM 0.21 only"."""
        if self.first == self.last:
            return f"vLLM 0.{self.first} only"
        if self.last == NEWEST_MINOR:
            return f"vLLM 0.{self.first} and later (to 0.{NEWEST_MINOR})"
        return f"vLLM 0.{self.first} to 0.{self.last}"


ALL = Span(11)


@dataclass(frozen=True)
class MethodFacts:
    """One `method` value: which releases run it and whether it takes a `model`.

    needs_model: True (a draft model or head is required), False (the operator refuses a
    `model`: the method drafts from the prompt or the target's own MTP layers), None
    (either: dspark can ship its weights inside the target checkpoint).
    """

    span: Span
    needs_model: bool | None


# SpeculativeMethod (and EagleModelTypes) in vllm/config/speculative.py of each release.
# MTP aliases (deepseek_mtp, qwen3_next_mtp, ...) are accepted by vLLM and renamed to mtp
# with a deprecation warning; the operator asks for `mtp` itself.
METHODS: dict[str, MethodFacts] = {
    "eagle": MethodFacts(ALL, True),
    "eagle3": MethodFacts(ALL, True),
    "mtp": MethodFacts(ALL, False),
    "ngram": MethodFacts(ALL, False),
    "suffix": MethodFacts(ALL, False),  # 0.11.1+; needs arctic-inference in the image
    # In the Literal from 0.11, but 0.11-0.14 raise NotImplementedError at start
    # (arg_utils.py "Draft model speculative decoding is not supported yet."); works in
    # V1 from 0.15.0.
    "draft_model": MethodFacts(Span(15), True),
    # Gone from the Literal in 0.33.0 (present in 0.32.0).
    "medusa": MethodFacts(Span(11, 32), True),
    "mlp_speculator": MethodFacts(Span(11, 32), True),
    "ngram_gpu": MethodFacts(Span(18), False),  # NgramGPUTypes, 0.18.0
    "dflash": MethodFacts(Span(20), True),  # DFlashModelTypes, 0.20.0
    "dspark": MethodFacts(Span(25), None),  # DSparkModelTypes, 0.25.0
}
# In the Literal, yet no supported release can start it: vllm/model_executor/models/
# registry.py has `"MLPSpeculatorPreTrainedModel"` commented out ("Temporarily disabled ...
# Re-enable this once the MLP Speculator is supported in V1") in every V1-only release, so
# building the draft's ModelConfig fails at start-up. Checked against 0.32.0's own code
# (tests/data/vllm-0.32.0-speculative-configs.yaml). The operator refuses it in every release.
NEVER_STARTS: dict[str, str] = {
    "mlp_speculator": "Model architectures ['MLPSpeculatorPreTrainedModel'] are not supported "
    "for now.",
}
DRAFT_MODEL_NOT_IMPLEMENTED = (
    "NotImplementedError: Draft model speculative decoding is not supported yet. Please "
    "consider using other speculative decoding methods such as ngram, medusa, eagle, or mtp."
)

# SpeculativeConfig fields the operator models, with the releases whose dataclass has
# them (fields every release has are not listed). `disable_by_batch_size` is listed so a
# user who still writes it gets a message pointing at its replacement.
FIELDS: dict[str, Span] = {
    "disable_by_batch_size": Span(11, 16),  # removed in 0.17.0; did nothing in V1
    "parallel_drafting": Span(16),
    "rejection_sample_method": Span(18),
    "synthetic_acceptance_rates": Span(20),  # 0.19 had a single synthetic_acceptance_rate
    "synthetic_acceptance_length": Span(20),
    "speculative_token_tree": Span(11, 20),  # removed with tree attention in 0.21.0
    "draft_sample_method": Span(21),
    "num_speculative_tokens_per_batch_size": Span(24),
}

# Literal values of the enum-like fields, per release.
FIELD_VALUES: dict[str, dict[str, Span]] = {
    # RejectionSampleMethod: ("strict", "probabilistic") 0.18, + "synthetic" 0.19;
    # renamed ("standard", "synthetic") 0.21; + "block" 0.25; + "fly" 0.33.
    "rejection_sample_method": {
        "strict": Span(18, 20),
        "probabilistic": Span(18, 20),
        "synthetic": Span(20),  # 0.19's synthetic mode used another field: not modelled
        "standard": Span(21),
        "block": Span(25),
    },
    # DraftSampleMethod: ("greedy", "gumbel") 0.21; ("greedy", "probabilistic") 0.22+.
    "draft_sample_method": {
        "greedy": Span(21),
        "gumbel": Span(21, 21),
        "probabilistic": Span(22),
    },
}

# vllm/config/utils.py: `@config` merges ConfigDict(extra="forbid") from 0.16.0; up to
# 0.15.x a pydantic dataclass silently ignores unknown keys.
UNKNOWN_KEYS_REJECTED = Span(16)

# vllm/engine/arg_utils.py: `--per-request-spec-decode-metrics none|summary|detailed`
# (ObservabilityConfig), 0.29.0+: acceptance per request under
# `metrics.speculative_decoding` in each response.
PER_REQUEST_SPEC_DECODE_METRICS = Span(29)


@dataclass(frozen=True)
class MetricFacts:
    """A Prometheus series the operator reads, with the releases that expose it."""

    name: str
    span: Span
    labels: tuple[str, ...] = ("model_name", "engine")


# Checked in every release 0.11.2..0.33.0 (loggers.py `labelnames = ["model_name",
# "engine"]`; spec_decode/metrics.py adds "position"; request_success adds
# "finished_reason"). Counters carry `_total` on the wire.
METRICS: dict[str, MetricFacts] = {
    "drafts": MetricFacts("vllm:spec_decode_num_drafts_total", ALL),
    "draft_tokens": MetricFacts("vllm:spec_decode_num_draft_tokens_total", ALL),
    "accepted": MetricFacts("vllm:spec_decode_num_accepted_tokens_total", ALL),
    "accepted_per_position": MetricFacts(
        "vllm:spec_decode_num_accepted_tokens_per_pos_total",
        ALL,
        ("model_name", "engine", "position"),
    ),
    "finished_requests": MetricFacts(
        "vllm:request_success_total", ALL, ("model_name", "engine", "finished_reason")
    ),
    "step_itl": MetricFacts("vllm:inter_token_latency_seconds", ALL),
    "engine_steps": MetricFacts("vllm:iteration_tokens_total", ALL),
    # Mirror's acceptance bound: the longest finished request's bucket edge (1-2-5 buckets
    # up to max_model_len; from 0.30 `--custom-histogram-buckets` may override them, which
    # the bound reads as they are). Checked in the same wheels as the gauges below.
    "request_length": MetricFacts("vllm:request_generation_tokens", ALL),
    # Gauges (checked in 0.11.2, 0.12, 0.13, 0.15, 0.16, 0.17, 0.19, 0.20, 0.26, 0.30, 0.33):
    # Mirror's arrivals (`adapters.metrics.outcomes`) and the tuning's load histogram.
    "requests_running": MetricFacts("vllm:num_requests_running", ALL),
    "requests_waiting": MetricFacts("vllm:num_requests_waiting", ALL),
    # Removed in 0.15.0 (the old name of inter_token_latency_seconds): never read.
    "time_per_output_token": MetricFacts("vllm:time_per_output_token_seconds", Span(11, 14)),
}


# vllm/v1/engine/__init__.py FINISH_REASON_STRINGS: the `finished_reason`s of
# vllm:request_success_total (loggers.py creates every reason's series at 0 at start).
# 0.11.2: stop, length, abort; "error" (a request-level internal error, always an HTTP 500)
# from 0.13.0 (checked 0.12.0, 0.13.0, 0.15.0); "repetition" (a repetitive pattern
# detected) from 0.17.0 (checked 0.16.0, 0.17.0, 0.19.0, 0.20.0, 0.26.0, 0.30.0, 0.33.0).
# Up to 0.12 an engine error reaches no reason: Mirror's ErrorRate sees it only as a
# request the candidate's engine never finished (`domain.gates.mirror_outcomes`).
FINISH_REASONS: dict[str, Span] = {
    "stop": ALL,
    "length": ALL,
    "abort": ALL,
    "error": Span(13),
    "repetition": Span(17),
}


def parse_version(text: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of "0.33.0", or None when the text is not a version."""
    if re.fullmatch(VERSION_PATTERN, text) is None:
        return None
    major, minor, patch = (int(part) for part in text.split("."))
    return major, minor, patch


def version_from_image(image: str) -> str | None:
    """The vLLM version an image tag names (`vllm/vllm-openai:v0.33.0` -> "0.33.0")."""
    found = re.search(IMAGE_TAG_VERSION, image)
    return None if found is None else found.group(1)


def is_supported(version: str) -> bool:
    """Whether the operator supports this vLLM release (0.11.2 to 0.33.x)."""
    parsed = parse_version(version)
    return parsed is not None and parsed >= OLDEST_SUPPORTED and parsed[:2] <= (0, NEWEST_MINOR)


def minor_of(version: str) -> int:
    """The 0.x minor of a supported version string."""
    parsed = parse_version(version)
    if parsed is None:
        raise ValueError(f"not a vLLM version: {version!r}")
    return parsed[1]


def methods_in(version: str) -> frozenset[str]:
    """Methods the operator accepts for this release."""
    minor = minor_of(version)
    return frozenset(
        name for name, facts in METHODS.items() if minor in facts.span and name not in NEVER_STARTS
    )


def field_exists(field: str, version: str) -> bool:
    """Whether vLLM `version`'s SpeculativeConfig has this (modelled) field."""
    span = FIELDS.get(field, ALL)
    return minor_of(version) in span


def version_regex(span: Span) -> str:
    """A regex (no anchors) for the `0.Y.Z` releases of a span, honouring 0.11.2 as the
    oldest supported release."""
    minors = [minor for minor in range(span.first, span.last + 1)]
    alternatives = []
    if OLDEST_SUPPORTED[1] in minors:
        minors.remove(OLDEST_SUPPORTED[1])
        alternatives.append(f"{OLDEST_SUPPORTED[1]}[.]([{OLDEST_SUPPORTED[2]}-9]|[1-9][0-9]+)")
    if minors:
        alternatives.append("(" + "|".join(str(minor) for minor in minors) + ")[.][0-9]+")
    return "0[.](" + "|".join(alternatives) + ")"


def effective_version(vllm_version: str | None, image: str) -> str:
    """The vLLM release a rollout runs: spec.engine.vllmVersion, else the image tag's
    `v0.Y.Z`, else the pinned release. The CRD's rules read it the same way
    (`speculative_rules.version_in`)."""
    if vllm_version is not None:
        return vllm_version
    return version_from_image(image) or PINNED_VLLM_VERSION
