"""Acceptance counters and step-ITL buckets from Prometheus, through prometheus-api-client.

Why it is careful: exact `_total` names and `increase()` over the stage's window (restarts
handled by Prometheus); an empty answer is "no drafts scraped" (Inconclusive), never
alpha = 0, and an absent step count is None, never zero.
Rationale in full: docs/internals.md.
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime
from typing import Any

import requests
from prometheus_api_client.exceptions import PrometheusApiClientException

from specdecode.adapters.metrics.access import (
    PrometheusReader,
)
from specdecode.adapters.metrics.protocol import EngineSelector
from specdecode.domain.acceptance_bound import REQUEST_LENGTH_SERIES
from specdecode.domain.observations import (
    COMPLETED_REASONS,
    DRAFT_TOKENS_SERIES,
    DRAFTS_SERIES,
    ENGINE_STEPS_SERIES,
    AcceptanceCounts,
    MetricError,
    StepHistogram,
)

DRAFTS = DRAFTS_SERIES
DRAFT_TOKENS = DRAFT_TOKENS_SERIES
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
ACCEPTED_PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
FINISHED_REQUESTS = "vllm:request_success_total"
REQUEST_LENGTH_BUCKETS = f"{REQUEST_LENGTH_SERIES}_bucket"
STEP_ITL_BUCKETS = "vllm:inter_token_latency_seconds_bucket"
ENGINE_STEPS = ENGINE_STEPS_SERIES
MIN_WINDOW_SECONDS = 2
COMPLETED = f'finished_reason=~"{"|".join(COMPLETED_REASONS)}"'


def window_query(
    metric: str, engine: EngineSelector, seconds: int, by: str = "", matching: str = ""
) -> str:
    """`sum(increase(metric{engine[,matching]}[window]))`, optionally grouped."""
    selector = f'namespace="{engine.namespace}",pod=~"{engine.pod_regex}"'
    selector += f",{matching}" if matching else ""
    grouping = f" by ({by})" if by else ""
    return f"sum{grouping}(increase({metric}{{{selector}}}[{seconds}s]))"


def step_histogram_query(engine: EngineSelector, seconds: int) -> str:
    """The window's step-ITL bucket increases of one engine, one row per `le`."""
    return window_query(STEP_ITL_BUCKETS, engine, seconds, by="le")


def step_count_query(engine: EngineSelector, seconds: int) -> str:
    """The window's engine steps of one engine: `iteration_tokens_total` observes each once."""
    return window_query(ENGINE_STEPS, engine, seconds)


def parse_step_count(rows: list[dict[str, Any]]) -> float | None:
    """The step count of `step_count_query`; None (unknown) for no rows or NaN.

    Why not 0: no series means the engine does not export it (or has not been scraped),
    and a 0 would claim no independent samples at all.
    """
    if not rows:
        return None
    value = float(rows[0]["value"][1])
    return None if math.isnan(value) else value


def parse_step_histogram(rows: list[dict[str, Any]], steps: float | None = None) -> StepHistogram:
    """Rows of `sum by (le)` as a histogram sorted by bound; NaN counts as 0.

    Equal bounds spelled differently ("1" and "1.0" from two vLLM versions) are merged.
    No rows is an empty histogram; a malformed `le` or a missing +Inf raises ValueError.
    `steps` is the window's engine-step count (`parse_step_count`), passed through.
    """
    counts: dict[float, float] = {}
    for row in rows:
        bound = float(row["metric"]["le"])  # "+Inf" parses as math.inf
        value = float(row["value"][1])
        counts[bound] = counts.get(bound, 0.0) + (0.0 if math.isnan(value) else value)
    bounds = tuple(sorted(counts))
    return StepHistogram(bounds, tuple(counts[bound] for bound in bounds), steps)


def longest_request_edge(rows: list[dict[str, Any]]) -> float | None:
    """The upper edge of the highest bucket the window's finished requests reached, from
    `sum by (le)` rows of vllm:request_generation_tokens; None when no request finished,
    the histogram is absent, or a request lies beyond the last finite edge (no bound)."""
    counts: dict[float, float] = {}
    for row in rows:
        bound = float(row["metric"]["le"])
        value = float(row["value"][1])
        counts[bound] = counts.get(bound, 0.0) + (0.0 if math.isnan(value) else value)
    highest, below = None, 0.0
    for bound in sorted(counts):
        if counts[bound] > below:
            highest, below = bound, counts[bound]
    return None if highest is None or math.isinf(highest) else highest


# A response that is not the shape Prometheus' API promises (a proxy's error page, a
# changed API): an Error verdict for the look, never an exception that stalls the rollout.
MALFORMED = (ValueError, KeyError, IndexError, TypeError)


def why(error: Exception) -> str:
    """A MetricError's message: the error, marked when the answer had the wrong shape."""
    shape = isinstance(error, MALFORMED) and not isinstance(error, ValueError)
    kind = f"malformed response ({type(error).__name__}) " if shape else ""
    return f"{kind}{error}"[:500]


class PrometheusMetrics(PrometheusReader):
    """`AcceptanceSource` and `StepLatencySource` backed by a Prometheus server."""

    async def acceptance(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> AcceptanceCounts | MetricError:
        """Counter increases over [start, end]; errors come back as MetricError."""
        try:
            return await asyncio.to_thread(self._query_all, engine, start, end)
        except (PrometheusApiClientException, requests.RequestException, *MALFORMED) as error:
            return MetricError(source=f"prometheus {self.url}", message=why(error))

    async def step_itl_histogram(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> StepHistogram | MetricError:
        """The engine's step-ITL bucket increases over [start, end]; empty without steps.

        With the window's engine-step count, from the same evaluation time and window, so
        the gate can count dependent observations of one step once.
        """
        seconds = max(MIN_WINDOW_SECONDS, math.ceil((end - start).total_seconds()))
        try:
            return await asyncio.to_thread(self._step_histogram, engine, seconds, end)
        except (PrometheusApiClientException, requests.RequestException, *MALFORMED) as error:
            return MetricError(source=f"prometheus {self.url}", message=why(error))

    def _step_histogram(self, engine: EngineSelector, seconds: int, end: datetime) -> StepHistogram:
        at = {"time": f"{end.timestamp():.3f}"}
        rows = self._instant(step_histogram_query(engine, seconds), at)
        steps = parse_step_count(self._instant(step_count_query(engine, seconds), at))
        return parse_step_histogram(rows, steps)

    def _query_all(
        self, engine: EngineSelector, start: datetime, end: datetime
    ) -> AcceptanceCounts:
        seconds = max(MIN_WINDOW_SECONDS, math.ceil((end - start).total_seconds()))
        at = {"time": f"{end.timestamp():.3f}"}
        drafts = self._sample(window_query(DRAFTS, engine, seconds), at)
        draft_tokens = self._sample(window_query(DRAFT_TOKENS, engine, seconds), at)
        accepted = self._sample(window_query(ACCEPTED, engine, seconds), at)
        per_position = self._by_position(
            window_query(ACCEPTED_PER_POSITION, engine, seconds, by="position"), at
        )
        completed = window_query(FINISHED_REQUESTS, engine, seconds, matching=COMPLETED)
        requests = self._sample(completed, at)
        lengths = window_query(REQUEST_LENGTH_BUCKETS, engine, seconds, by="le")
        return AcceptanceCounts(
            requests=requests or 0.0,
            longest_request_tokens=longest_request_edge(self._instant(lengths, at)),
            drafts=drafts or 0.0,
            draft_tokens=draft_tokens or 0.0,
            accepted_tokens=accepted or 0.0,
            per_position_accepted=per_position,
            drafts_scraped=drafts is not None and draft_tokens is not None,
        )

    def _sample(self, promql: str, params: dict[str, str]) -> float | None:
        """The query's one value; None when no series answered or it is NaN (unknown)."""
        rows = self._instant(promql, params)
        if not rows:
            return None
        value = float(rows[0]["value"][1])
        return None if math.isnan(value) else value

    def _by_position(self, promql: str, params: dict[str, str]) -> tuple[float, ...]:
        values: dict[int, float] = {}
        for row in self._instant(promql, params):
            position = int(row["metric"].get("position", "-1"))
            value = float(row["value"][1])
            if position >= 0 and not math.isnan(value):
                values[position] = value
        if not values:
            return ()
        return tuple(values.get(i, 0.0) for i in range(max(values) + 1))
