"""Time per output token against a known truth: a reference engine whose first chunk
carries 4 tokens, then one token per 10 ms step.

The span from the first chunk to the last delivered the tokens after the first chunk, so
the true time per output token is the engine's mean step gap; dividing by tokens - 1 (the
old formula) read (32 - 4) / (32 - 1) of it, 9.7 % short, which a test within 3 % catches.
"""

from __future__ import annotations

import pytest
from loadtesting import GREEDY, blocks_until_done

from specdecode.domain.prompts import builtin_prompts
from specdecode.domain.sketch import Sketch, bucket_value
from specdecode_load.pool import parse_endpoint
from specdecode_load.reference import ReferenceEngine, start_reference
from specdecode_load.schedule import worker_schedules
from specdecode_load.worker import WorkerSpec

pytestmark = pytest.mark.unit

TOKENS, FIRST = 32, 4


def mean(sketch: Sketch) -> float:
    """A sketch's mean, to its 0.5 % accuracy."""
    return sum(bucket_value(i) * n for i, n in sketch.counts.items()) / sketch.total


async def test_tpot_is_the_true_step_when_the_first_chunk_carries_four_tokens() -> None:
    engine = ReferenceEngine(step_seconds=[0.010], first_chunk_tokens=FIRST)
    server, port, stepping = await start_reference(engine)
    (schedule,) = worker_schedules(0, 1, 1, 24, None)
    spec = WorkerSpec(
        worker=0, model="ref", seed=3,
        prompts=tuple(builtin_prompts("chat", 8, 3, TOKENS, GREEDY)),
        schedule=schedule, concurrency=4, request_rate=None, max_in_flight=8,
        request_timeout=30.0, block_seconds=0.5,
        endpoints=(parse_endpoint(f"http://127.0.0.1:{port}"),),
    )  # fmt: skip
    blocks = await blocks_until_done(spec, server, stepping)
    tpot = Sketch()
    for block in blocks:
        tpot.merge(block.time_per_output_token)
    assert tpot.total == 24 and sum(b.output_tokens for b in blocks) == 24 * TOKENS
    truth = mean(engine.truth_chunk)  # one token per gap after the first chunk
    assert truth >= 0.010
    assert mean(tpot) == pytest.approx(truth, rel=0.03), (mean(tpot), truth)
