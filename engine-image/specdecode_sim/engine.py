"""The engine core: continuous batching with speculative decoding, one step at a time.

Pure and clock-free: `step(now)` schedules, "runs" the step (its duration comes from
steptime.py and draft.py) and returns what each request received. Scheduling follows
vLLM V1 in outline: running requests first (each decode verifies 1 + drafted tokens),
then prefill chunks, then admission from the FIFO waiting queue while the token budget
(max_num_batched_tokens), max_num_seqs and the KV cache allow. When the KV cache is
full the newest running request is preempted and recomputed later.
Drafts for the next step are proposed with k from the per-batch-size schedule (0.24+)
for the running batch (k = 0: a plain step); `rejection_sample_method: synthetic` (0.20+)
replaces the acceptance model with the configured per-position rates.
"""

from __future__ import annotations

import random
from collections import deque

from specdecode_sim.acceptance import LOOKUP_METHODS, draw_accepted, synthetic_conditional
from specdecode_sim.draft import draft_seconds
from specdecode_sim.engineconfig import EngineConfig, SpecPlan
from specdecode_sim.lookup import ngram_proposal, suffix_proposal
from specdecode_sim.request import Emission, SimRequest, SpecStepStats, StepReport
from specdecode_sim.steptime import StepShape, target_step_seconds
from specdecode_sim.suffixindex import ResponseCache

__all__ = ["EngineConfig", "EngineCore", "SpecPlan"]


class EngineCore:
    """Holds the waiting queue and the running batch; advanced by `step`."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self._spike_rng = random.Random(config.seed ^ 0x5EED)
        spec = config.spec
        suffix = spec is not None and spec.method == "suffix"
        self._suffix_cache = ResponseCache(
            spec.suffix_max_depth if spec else 24,
            spec.suffix_max_cached_requests if spec and suffix else 0,
        )
        # k of the drafts proposed last (what the next step verifies and pays for).
        self.k_in_use = spec.tokens_for_batch(1) if spec else 0

    def add(self, request: SimRequest) -> None:
        """Queue a new request."""
        self.waiting.append(request)

    def abort(self, request_id: str) -> SimRequest | None:
        """Drop a request wherever it is (client went away)."""
        for queue in (self.waiting, self.running):
            for request in list(queue):
                if request.request_id == request_id:
                    queue.remove(request)
                    request.finish_reason = "abort"
                    return request
        return None

    @property
    def kv_used(self) -> int:
        """Tokens held in the KV cache by running requests."""
        return sum(request.num_computed for request in self.running)

    def has_work(self) -> bool:
        """Whether a step would do anything."""
        return bool(self.waiting or self.running)

    def _preempt_newest(self, keep: SimRequest) -> int | None:
        """Preempt the newest running request other than `keep`: the KV tokens freed."""
        for victim in reversed(self.running):
            if victim is not keep:
                self.running.remove(victim)
                freed, victim.num_computed = victim.num_computed, 0
                victim.pending_draft, victim.pending_proposal = 0, []
                self.waiting.appendleft(victim)
                return freed
        return None

    def _schedule_running(
        self,
        budget: int,
        report: StepReport,
        decodes: list[tuple[SimRequest, int]],
        prefills: list[tuple[SimRequest, int]],
    ) -> tuple[int, int]:
        """Running requests first (vLLM V1): decodes verify 1 + drafted tokens, unfinished
        prefills get chunks; preempt the newest when the KV cache would overflow.
        Returns the token budget left and the KV tokens in use."""
        config = self.config
        kv_used = self.kv_used  # changes only by preemption while scheduling
        preempted: set[int] = set()
        for request in list(self.running):
            if id(request) in preempted:
                continue
            if request.prefill_done:
                drafted = min(request.pending_draft, max(budget - 1, 0))
                while kv_used + drafted + 1 > config.kv_capacity_tokens:
                    freed = self._preempt_newest(request)
                    if freed is None:
                        break
                    kv_used -= freed
                    preempted.add(id(self.waiting[0]))
                    report.preemptions += 1
                if budget >= 1:
                    decodes.append((request, drafted))
                    budget -= 1 + drafted
            else:
                chunk = min(request.prefill_target - request.num_computed, budget)
                if chunk > 0:
                    prefills.append((request, chunk))
                    budget -= chunk
        return budget, kv_used

    def step(self, now: float) -> StepReport | None:
        """Schedule and run one engine step starting at simulated time `now`."""
        if not self.has_work():
            return None
        config = self.config
        budget = config.max_num_batched_tokens
        report = StepReport(started=now, duration=0.0)
        decodes: list[tuple[SimRequest, int]] = []
        prefills: list[tuple[SimRequest, int]] = []
        budget, kv_used = self._schedule_running(budget, report, decodes, prefills)
        while self.waiting and budget > 0 and len(self.running) < config.max_num_seqs:
            candidate = self.waiting[0]
            chunk = min(candidate.prefill_target - candidate.num_computed, budget)
            if kv_used + chunk > config.kv_capacity_tokens:
                break
            self.waiting.popleft()
            self.running.append(candidate)
            if candidate.scheduled_ts is None:
                candidate.scheduled_ts = max(now, candidate.arrival_ts)
            prefills.append((candidate, chunk))
            budget -= chunk
        report.duration = self._duration(decodes, prefills)
        end = report.ended
        spec_stats = SpecStepStats(config.spec.num_speculative_tokens) if config.spec else None
        for request, drafted in decodes:
            self._run_decode(request, drafted, end, report, spec_stats)
        for request, chunk in prefills:
            request.num_computed += chunk
            if request.num_computed >= request.prefill_target:
                self._emit(request, 1, end, report)
                request.num_computed = request.total_tokens - 1
        if config.spec is not None:
            self.k_in_use = config.spec.tokens_for_batch(len(self.running))
            report.speculative_tokens_in_use = self.k_in_use
        for request in self.running:
            if request.prefill_done:
                self._propose(request)
        report.spec = spec_stats if spec_stats and spec_stats.drafts else None
        report.running, report.waiting = len(self.running), len(self.waiting)
        report.kv_usage = min(1.0, self.kv_used / max(config.kv_capacity_tokens, 1))
        return report

    def _duration(
        self, decodes: list[tuple[SimRequest, int]], prefills: list[tuple[SimRequest, int]]
    ) -> float:
        config = self.config
        verified = sum(1 + drafted for _, drafted in decodes)
        prefill_tokens = sum(chunk for _, chunk in prefills)
        attention = float(sum((1 + d) * r.total_tokens for r, d in decodes))
        attention += sum(chunk * (r.num_computed + chunk / 2) for r, chunk in prefills)
        shape = StepShape(
            decode_sequences=len(decodes),
            verified_tokens=verified,
            prefill_tokens=prefill_tokens,
            kv_tokens_read=self.kv_used,
            attention_token_context=float(attention),
            prefill_sequences=len(prefills),
            speculative=any(drafted for _, drafted in decodes),
        )
        seconds = target_step_seconds(
            config.hardware, config.model, config.tensor_parallel_size, shape
        )
        if config.spec is not None and decodes:
            context = sum(r.total_tokens for r, _ in decodes) // len(decodes)
            seconds += draft_seconds(
                config.spec.method,
                config.hardware,
                config.model,
                config.tensor_parallel_size,
                len(decodes),
                self.k_in_use,
                context,
                draft_tp=config.spec.draft_tensor_parallel_size,
                head=config.spec.head,
            )
        if config.latency_spike_probability and (
            self._spike_rng.random() < config.latency_spike_probability
        ):
            # Uniform in [0.5, 1.5] x the mean: real stalls (a GC pause, a preemption, a
            # swap) vary, and a fixed length would tie every stalled gap in one bucket.
            seconds += config.latency_spike_seconds * self._spike_rng.uniform(0.5, 1.5)
        return seconds

    def _run_decode(
        self,
        request: SimRequest,
        drafted: int,
        end: float,
        report: StepReport,
        spec_stats: SpecStepStats | None,
    ) -> None:
        spec = self.config.spec
        accepted = 0
        if spec is not None and drafted > 0:
            if spec.synthetic_rates is not None:
                conditional = synthetic_conditional(spec.synthetic_rates, drafted)
                accepted = draw_accepted(request.rng, conditional)
            elif spec.method in LOOKUP_METHODS:
                truth = request.stream.peek(drafted)
                for proposed, actual in zip(
                    request.pending_proposal[:drafted], truth, strict=False
                ):
                    if proposed != actual:
                        break
                    accepted += 1
            else:
                conditional = self.config.acceptance.conditional(
                    spec.method,
                    request.workload,
                    drafted,
                    spec.head,
                    request.temperature,
                    request.top_p,
                )
                accepted = draw_accepted(request.rng, conditional)
            if spec_stats is not None:
                spec_stats.observe(drafted, accepted)
        emitted = self._emit(request, accepted + 1, end, report)
        request.num_computed += emitted

    def _emit(self, request: SimRequest, count: int, end: float, report: StepReport) -> int:
        config = self.config
        limit = min(
            request.max_tokens - len(request.output), config.max_model_len - request.total_tokens
        )
        finish: str | None = None
        if count >= limit:
            count, finish = max(limit, 0), "length"
        if not request.ignore_eos and len(request.output) + count >= request.natural_length:
            count, finish = max(request.natural_length - len(request.output), 0), "stop"
        tokens = request.stream.take(count)
        if request.stop:
            tokens, finish = self._apply_stop(request, tokens, finish)
        first = not request.output
        itl = None if first or request.last_token_ts is None else end - request.last_token_ts
        request.output.extend(tokens)
        if request.lookup_index is not None:
            request.lookup_index.extend(tokens)
        if request.suffix_history is not None:
            request.suffix_history.append(0, tokens)
        if first:
            request.first_token_ts = end
            report.prompt_tokens += len(request.prompt)
        request.last_token_ts = end
        report.generation_tokens += len(tokens)
        if finish is not None:
            request.finish_reason = finish
            self.running.remove(request)
            report.finished.append(request)
            self._suffix_cache.add(request.output)
        report.emissions.append(Emission(request, tokens, finish, first, itl))
        return len(tokens)

    @staticmethod
    def _apply_stop(
        request: SimRequest, tokens: list[str], finish: str | None
    ) -> tuple[list[str], str | None]:
        for cut in range(len(tokens)):
            text = " ".join([*request.output[-8:], *tokens[: cut + 1]])
            for stop in request.stop:
                if stop and stop in text:
                    request.stop_reason = stop
                    return tokens[:cut], "stop"
        return tokens, finish

    def _propose(self, request: SimRequest) -> None:
        spec = self.config.spec
        if spec is None:
            return
        room = self.config.max_model_len - request.total_tokens - 1
        k = max(0, min(self.k_in_use, room))
        if spec.method == "ngram" and request.lookup_index is not None:
            request.pending_proposal = ngram_proposal(
                request.lookup_index, k, self.config.max_model_len
            )
        elif spec.method == "suffix" and request.suffix_history is not None:
            request.pending_proposal = suffix_proposal(
                request.suffix_history,
                self._suffix_cache,
                k,
                spec.suffix_max_spec_factor,
                self.config.max_model_len,
                spec.suffix_min_token_prob,
            )
        else:
            request.pending_proposal = []
            request.pending_draft = k
            return
        request.pending_draft = len(request.pending_proposal)
