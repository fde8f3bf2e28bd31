"""Prometheus metrics with vLLM V1's names, types, labels and buckets, per release.

Own registry (no global state). Labels `model_name` (first served name) and `engine`
("0"). Spec-decode counters only exist when a speculative config is set, as in vLLM.
Up to 0.14 vLLM still exports the deprecated `vllm:time_per_output_token_seconds`
alongside `vllm:inter_token_latency_seconds` (same samples: one per engine step per
request); 0.15 removed it. Every other series is the same across 0.11.2-0.33.x.
The simulator adds `specdecode_sim_speculative_tokens_in_use` (the k of the last step,
which follows the batch size under `num_speculative_tokens_per_batch_size`).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from specdecode_sim.releases import PINNED_VLLM_VERSION, Release, parse_release
from specdecode_sim.request import SimRequest, StepReport

TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
ITL_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
REQUEST_LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
    60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
ITERATION_TOKEN_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def one_two_five_buckets(max_value: int) -> list[float]:
    """1, 2, 5, 10, 20, 50, ... up to max_value (vLLM's build_1_2_5_buckets)."""
    buckets: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return buckets
            buckets.append(float(value))
        exponent += 1


class EngineMetrics:
    """The engine's metrics; `record_step` is called once per engine step."""

    def __init__(
        self,
        model_name: str,
        max_model_len: int,
        num_spec_tokens: int | None,
        release: Release | None = None,
    ) -> None:
        release = release or parse_release(PINNED_VLLM_VERSION)
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ["model_name", "engine"]
        values = (model_name, "0")
        reg = self.registry

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, labels, registry=reg)

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, labels, registry=reg)

        def histogram(name: str, doc: str, buckets: tuple[float, ...] | list[float]) -> Histogram:
            return Histogram(name, doc, labels, registry=reg, buckets=buckets)

        self.running = gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches."
        ).labels(*values)
        self.waiting = gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed."
        ).labels(*values)
        sleep = Gauge(
            "vllm:engine_sleep_state",
            "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
            "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep "
            "level 2.",
            [*labels, "sleep_state"],
            registry=reg,
        )
        for state, value in (("awake", 1), ("weights_offloaded", 0), ("discard_all", 0)):
            sleep.labels(*values, state).set(value)
        self.kv_usage = gauge(
            "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."
        ).labels(*values)
        self.prefix_queries = counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
        ).labels(*values)
        self.prefix_hits = counter(
            "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."
        ).labels(*values)
        self.preemptions = counter(
            "vllm:num_preemptions", "Cumulative number of preemption from the engine."
        ).labels(*values)
        self.prompt_tokens = counter(
            "vllm:prompt_tokens", "Number of prefill tokens processed."
        ).labels(*values)
        self.generation_tokens = counter(
            "vllm:generation_tokens", "Number of generation tokens processed."
        ).labels(*values)
        success = Counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            [*labels, "finished_reason"],
            registry=reg,
        )
        self.success = {
            reason: success.labels(*values, reason) for reason in release.finish_reasons
        }
        size_buckets = one_two_five_buckets(max_model_len)
        self.request_prompt_tokens = histogram(
            "vllm:request_prompt_tokens", "Number of prefill tokens processed.", size_buckets
        ).labels(*values)
        self.request_generation_tokens = histogram(
            "vllm:request_generation_tokens", "Number of generation tokens processed.", size_buckets
        ).labels(*values)
        self.iteration_tokens = histogram(
            "vllm:iteration_tokens_total",
            "Histogram of number of tokens per engine_step.",
            ITERATION_TOKEN_BUCKETS,
        ).labels(*values)
        self.max_generation_tokens = histogram(
            "vllm:request_max_num_generation_tokens",
            "Histogram of maximum number of requested generation tokens.",
            size_buckets,
        ).labels(*values)
        self.params_n = histogram(
            "vllm:request_params_n", "Histogram of the n request parameter.", (1, 2, 5, 10, 20)
        ).labels(*values)
        self.params_max_tokens = histogram(
            "vllm:request_params_max_tokens",
            "Histogram of the max_tokens request parameter.",
            size_buckets,
        ).labels(*values)
        self.ttft = histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            TTFT_BUCKETS,
        ).labels(*values)
        self.tpot_deprecated = (
            histogram(
                "vllm:time_per_output_token_seconds",
                "Histogram of time per output token in seconds."
                "DEPRECATED: Use vllm:inter_token_latency_seconds instead.",
                ITL_BUCKETS,
            ).labels(*values)
            if release.exports_time_per_output_token
            else None
        )
        self.itl = histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            ITL_BUCKETS,
        ).labels(*values)
        self.request_tpot = histogram(
            "vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.",
            ITL_BUCKETS,
        ).labels(*values)
        self.e2e = histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            REQUEST_LATENCY_BUCKETS,
        ).labels(*values)
        self.queue_time = histogram(
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
            REQUEST_LATENCY_BUCKETS,
        ).labels(*values)
        self.inference_time = histogram(
            "vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.",
            REQUEST_LATENCY_BUCKETS,
        ).labels(*values)
        self.prefill_time = histogram(
            "vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.",
            REQUEST_LATENCY_BUCKETS,
        ).labels(*values)
        self.decode_time = histogram(
            "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.",
            REQUEST_LATENCY_BUCKETS,
        ).labels(*values)
        self.spec: SpecDecodeCounters | None = None
        self.k_in_use: Gauge | None = None
        if num_spec_tokens is not None:
            self.spec = SpecDecodeCounters(reg, labels, values, num_spec_tokens)
            self.k_in_use = gauge(
                "specdecode_sim_speculative_tokens_in_use",
                "Simulator only: speculative tokens per draft in the last step (0 = plain).",
            ).labels(*values)
            self.k_in_use.set(num_spec_tokens)

    def record_step(self, report: StepReport) -> None:
        """Scheduler and iteration stats of one step, then finished requests."""
        self.running.set(report.running)
        self.waiting.set(report.waiting)
        self.kv_usage.set(report.kv_usage)
        self.preemptions.inc(report.preemptions)
        self.prompt_tokens.inc(report.prompt_tokens)
        self.prefix_queries.inc(report.prompt_tokens)
        self.generation_tokens.inc(report.generation_tokens)
        self.iteration_tokens.observe(report.prompt_tokens + report.generation_tokens)
        if self.k_in_use is not None and report.speculative_tokens_in_use is not None:
            self.k_in_use.set(report.speculative_tokens_in_use)
        if report.spec is not None and self.spec is not None:
            self.spec.observe(
                report.spec.drafts,
                report.spec.draft_tokens,
                report.spec.accepted_tokens,
                report.spec.accepted_per_position,
            )
        for emission in report.emissions:
            request = emission.request
            if emission.first:
                self.ttft.observe(report.ended - request.arrival_ts)
                self.max_generation_tokens.observe(request.max_tokens)
                self.params_n.observe(1)
            elif emission.inter_token_latency is not None:
                self.itl.observe(emission.inter_token_latency)
                if self.tpot_deprecated is not None:
                    self.tpot_deprecated.observe(emission.inter_token_latency)
        for request in report.finished:
            self.record_finished(request, report.ended)

    def record_finished(self, request: SimRequest, now: float) -> None:
        """vLLM's finished-request histograms (abort included, as FinishReason.ABORT)."""
        reason = request.finish_reason or "abort"
        self.success[reason].inc()
        scheduled = request.scheduled_ts if request.scheduled_ts is not None else now
        first = request.first_token_ts if request.first_token_ts is not None else now
        last = request.last_token_ts if request.last_token_ts is not None else now
        generated = len(request.output)
        self.e2e.observe(now - request.arrival_ts)
        self.queue_time.observe(scheduled - request.arrival_ts)
        self.prefill_time.observe(first - scheduled)
        self.inference_time.observe(last - scheduled)
        self.decode_time.observe(last - first)
        self.request_prompt_tokens.observe(len(request.prompt))
        self.request_generation_tokens.observe(generated)
        self.request_tpot.observe((last - first) / (generated - 1) if generated > 1 else 0.0)
        self.params_max_tokens.observe(request.max_tokens)

    def record_engine_error(self) -> None:
        """A request the engine ended with an internal error (the `error_rate` fault):
        vLLM counts it as finished_reason "error" (0.13+) and answers HTTP 500; up to 0.12
        no reason counts it."""
        if "error" in self.success:
            self.success["error"].inc()

    def exposition(self) -> bytes:
        """Text exposition format for /metrics."""
        return generate_latest(self.registry)


class SpecDecodeCounters:
    """vllm:spec_decode_* counters (per-position counter has an extra `position` label)."""

    def __init__(
        self, registry: CollectorRegistry, labels: list[str], values: tuple[str, str], k: int
    ) -> None:
        self.drafts = Counter(
            "vllm:spec_decode_num_drafts",
            "Number of spec decoding drafts.",
            labels,
            registry=registry,
        ).labels(*values)
        self.draft_tokens = Counter(
            "vllm:spec_decode_num_draft_tokens",
            "Number of draft tokens.",
            labels,
            registry=registry,
        ).labels(*values)
        self.accepted = Counter(
            "vllm:spec_decode_num_accepted_tokens",
            "Number of accepted tokens.",
            labels,
            registry=registry,
        ).labels(*values)
        per_pos = Counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            [*labels, "position"],
            registry=registry,
        )
        self.per_position = [per_pos.labels(*values, str(position)) for position in range(k)]

    def observe(
        self, drafts: int, draft_tokens: int, accepted: int, per_position: list[int]
    ) -> None:
        """Add one step's aggregate."""
        self.drafts.inc(drafts)
        self.draft_tokens.inc(draft_tokens)
        self.accepted.inc(accepted)
        for counter, count in zip(self.per_position, per_position, strict=False):
            counter.inc(count)
