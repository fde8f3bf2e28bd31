"""Request state inside the engine, and what one engine step reports.

Timestamps are simulated seconds (wall seconds / time scale), the clock vLLM's metrics
would have seen on a real GPU.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from specdecode_sim.lookup import NgramIndex
from specdecode_sim.suffixindex import SuffixIndex
from specdecode_sim.textgen import TokenStream


@dataclass(eq=False)
class SimRequest:
    """One generation request from arrival to finish (compared by identity: the engine
    looks requests up in its running list every step, and a field-by-field comparison
    of 64 requests cost more CPU than the whole step model)."""

    request_id: str
    prompt: list[str]
    max_tokens: int
    workload: str
    arrival_ts: float
    stream: TokenStream
    natural_length: int
    rng: random.Random
    ignore_eos: bool = False
    stop: tuple[str, ...] = ()
    lookup_index: NgramIndex | None = None
    suffix_history: SuffixIndex | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    output: list[str] = field(default_factory=list)
    num_computed: int = 0
    pending_draft: int = 0
    pending_proposal: list[str] = field(default_factory=list)
    scheduled_ts: float | None = None
    first_token_ts: float | None = None
    last_token_ts: float | None = None
    finish_reason: str | None = None
    stop_reason: str | None = None

    @property
    def prefill_target(self) -> int:
        """Tokens that must be in the KV cache before decoding (re)starts."""
        return len(self.prompt) + max(len(self.output) - 1, 0)

    @property
    def prefill_done(self) -> bool:
        """True once the prompt (and, after preemption, the output so far) is computed."""
        return bool(self.output) and self.num_computed >= self.prefill_target

    @property
    def total_tokens(self) -> int:
        """Prompt plus output: what max_model_len bounds."""
        return len(self.prompt) + len(self.output)


@dataclass(frozen=True)
class Emission:
    """Tokens one request received in one step (one SSE chunk)."""

    request: SimRequest
    tokens: list[str]
    finish_reason: str | None
    first: bool
    inter_token_latency: float | None


@dataclass
class SpecStepStats:
    """vLLM's per-step spec-decode counters: drafts, drafted, accepted, per position."""

    num_spec_tokens: int
    drafts: int = 0
    draft_tokens: int = 0
    accepted_tokens: int = 0
    accepted_per_position: list[int] = field(default_factory=list)

    def observe(self, drafted: int, accepted: int) -> None:
        """One request's draft verified in this step."""
        if not self.accepted_per_position:
            self.accepted_per_position = [0] * self.num_spec_tokens
        self.drafts += 1
        self.draft_tokens += drafted
        self.accepted_tokens += accepted
        for position in range(accepted):
            self.accepted_per_position[position] += 1


@dataclass
class StepReport:
    """Everything one engine step did, stamped with its end time."""

    started: float
    duration: float
    emissions: list[Emission] = field(default_factory=list)
    finished: list[SimRequest] = field(default_factory=list)
    spec: SpecStepStats | None = None
    prompt_tokens: int = 0
    generation_tokens: int = 0
    preemptions: int = 0
    running: int = 0
    waiting: int = 0
    kv_usage: float = 0.0
    speculative_tokens_in_use: int | None = None  # k proposed for the next step (spec only)

    @property
    def ended(self) -> float:
        """When the step's tokens become visible."""
        return self.started + self.duration
