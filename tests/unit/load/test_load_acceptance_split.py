"""Acceptance split by traffic: labelled requests against an engine whose acceptance per
class is known, the engine's own per-request metrics, and the labels' way to status.

The reference engine draws each class's tokens per step from its own range and keeps, per
class, what the client should count; the split must match it group by group, so labels
that are dropped or mixed anywhere from the prompt line to status fail here.
"""

from __future__ import annotations

import json

import pytest
from loadtesting import (
    DONE,
    Harness,
    blocks_until_done,
    chat_event,
    response,
    role_event,
)

from specdecode.api.acceptance_by_traffic import AcceptanceBasis
from specdecode.domain.acceptance_moments import AcceptedMoments, GroupEvidence
from specdecode.domain.acceptance_split import acceptance_by_traffic
from specdecode.domain.latency_block import BLOCK_FIELDS, LatencyBlock, merge_values
from specdecode.domain.load_report import LoadReport, report_from_wire, report_to_wire
from specdecode.domain.load_status import load_status
from specdecode.domain.observations import AcceptanceCounts, LatencySamples, StageObservations
from specdecode.domain.prompts import SamplingDefaults, parse_jsonl
from specdecode_load.pool import parse_endpoint
from specdecode_load.reference import ReferenceEngine, start_reference
from specdecode_load.schedule import worker_schedules
from specdecode_load.worker import WorkerSpec

pytestmark = pytest.mark.unit

GREEDY = SamplingDefaults(temperature=0.0, top_p=1.0)

SEED = 11
DRAFT_LENGTH = 3  # k: drafts of 3 tokens, as the counters below say
# code, greedy, short answers: up to 4 tokens per step (1 + up to 3 accepted);
# chat, sampled hot, medium answers: 1 token per step (nothing accepted)
PROMPTS = "\n".join(
    [
        *(
            json.dumps({"prompt": f"def f{i}():", "workload": "code", "max_tokens": 48})
            for i in range(3)
        ),
        *(
            json.dumps(
                {"prompt": f"hi {i}", "class": "chat", "temperature": 0.8, "max_tokens": 140}
            )
            for i in range(3)
        ),
    ]
)
COUNTS = AcceptanceCounts(drafts=1000.0, draft_tokens=3000.0, accepted_tokens=1500.0)


def _total(blocks: list[LatencyBlock]) -> LatencyBlock:
    merged = {f.name: merge_values(f.kind, blocks, f.name) for f in BLOCK_FIELDS}
    return LatencyBlock(start=0.0, seconds=0.0, **merged)


async def _run_labelled(requests: int) -> tuple[list[LatencyBlock], ReferenceEngine]:
    prompts = parse_jsonl(PROMPTS, 64, GREEDY)
    # the chat lines carry only `class`: the engine sees no workload header for them
    engine = ReferenceEngine(step_seconds=[0.002], tokens_per_step_by_class={"code": 4})
    server, port, stepping = await start_reference(engine)
    (schedule,) = worker_schedules(0, 1, 1, requests, None)
    spec = WorkerSpec(
        worker=0,
        model="ref",
        seed=SEED,
        prompts=tuple(prompts),
        schedule=schedule,
        concurrency=6,
        request_rate=None,
        max_in_flight=16,
        request_timeout=30.0,
        block_seconds=0.5,
        endpoints=(parse_endpoint(f"http://127.0.0.1:{port}"),),
    )
    blocks = await blocks_until_done(spec, server, stepping)
    return blocks, engine


async def test_two_labelled_classes_with_known_acceptance_get_their_own_estimates() -> None:
    blocks, engine = await _run_labelled(requests=30)
    total = _total(blocks)
    assert total.requests_ok == 30
    groups = total.by_traffic
    assert set(groups) == {"code/greedy/short", "chat/high/medium"}  # labels kept
    truth = {
        "code/greedy/short": engine.accepted_truth["code"],
        "chat/high/medium": engine.accepted_truth[""],
    }
    for key, (requests, steps, accepted) in truth.items():
        stream = groups[key].stream
        assert (stream.requests, stream.steps, stream.accepted) == (requests, steps, accepted)
        assert groups[key].engine.requests == 0  # this engine reports no per-request metrics
    code_truth, chat_truth = truth["code/greedy/short"], truth["chat/high/medium"]
    assert chat_truth[2] == 0 and 1.2 < code_truth[2] / code_truth[1] < 1.8  # 1.5 expected

    window = LatencySamples(blocks=tuple(blocks), window_seconds=10.0, shards=1)
    split = {
        (g.traffic_class, g.temperature, g.output_length): g
        for g in acceptance_by_traffic(window, COUNTS)
    }
    code, chat = split[("code", "greedy", "short")], split[("chat", "high", "medium")]
    per_step = code_truth[2] / code_truth[1]
    assert code.accepted_per_step == round(per_step, 4)
    assert code.alpha == round(per_step / DRAFT_LENGTH, 4)
    assert code.lower_bound is not None and code.upper_bound is not None
    assert code.lower_bound < code.alpha < code.upper_bound
    assert chat.alpha == chat.accepted_per_step == 0.0
    assert (code.requests, chat.requests) == (code_truth[0], chat_truth[0])
    assert {code.basis, chat.basis} == {AcceptanceBasis.STREAM}
    # without the candidate's counters there is no draft length: no alpha, the rest stays
    bare = acceptance_by_traffic(window, None)
    assert all(g.alpha is None and g.accepted_per_step is not None for g in bare)


# vLLM 0.32's final usage chunk with --per-request-spec-decode-metrics summary
# (ChatCompletionStreamResponse.model_dump_json(exclude_unset=True, exclude_none=True))
ENGINE_FINAL = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[],"usage":{"prompt_tokens":8,"total_tokens":16,"completion_tokens":8},'
    b'"metrics":{"speculative_decoding":{"mean_acceptance_length":2.0,'
    b'"draft_acceptance_rate":0.5,"acceptance_histogram":[1,1,1],"num_spec_steps":3,'
    b'"num_accepted_draft_tokens":3,"num_draft_tokens":6,"num_spec_tokens":2}}}\n\n'
)


async def test_the_engines_per_request_metrics_win_over_merged_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The engine took 4 steps of 2 tokens (1 accepted of 2 drafted each, after the first),
    # but the server merged the last two into one chunk of 4: the stream sees 2 decode
    # chunks and 4 accepted tokens (2 per step, inflated); the engine says 3 steps, 3 of 6.
    group = "code/greedy/short"
    events = [role_event(), chat_event(2), chat_event(4), chat_event(8), ENGINE_FINAL, DONE]
    blocks = []
    for _ in range(2):
        h = Harness(monkeypatch)
        h.start(group)
        head, pieces = response(events)
        h.feed(head, 0.0)
        for at, piece in enumerate(pieces):
            h.feed(piece, 0.01 * (at + 1))
        blocks.append(h.block())
    evidence = _total(blocks).by_traffic[group]
    assert (evidence.stream.requests, evidence.stream.steps, evidence.stream.accepted) == (2, 4, 8)
    assert (evidence.engine.requests, evidence.engine.steps, evidence.engine.accepted) == (2, 12, 6)
    assert evidence.engine_steps == 6
    window = LatencySamples(blocks=tuple(blocks), window_seconds=1.0, shards=1)
    (found,) = acceptance_by_traffic(window, COUNTS)
    assert found.basis is AcceptanceBasis.ENGINE
    assert (found.alpha, found.accepted_per_step, found.steps) == (0.5, 1.0, 6)
    # the control: the same stream without the engine's metrics is read from the chunks
    h = Harness(monkeypatch)
    h.start(group)
    head, pieces = response([role_event(), chat_event(2), chat_event(4), chat_event(8), DONE])
    for at, piece in enumerate([head, *pieces]):
        h.feed(piece, 0.01 * at)
    window = LatencySamples(blocks=(h.block(),), window_seconds=1.0, shards=1)
    (streamed,) = acceptance_by_traffic(window, COUNTS)
    assert streamed.basis is AcceptanceBasis.STREAM and streamed.accepted_per_step == 2.0


def test_the_split_travels_the_report_wire_into_status() -> None:
    groups = {
        "code/greedy/short": GroupEvidence(AcceptedMoments.of([(10, 15), (20, 28), (5, 8)])),
        "support-bot/low/long": GroupEvidence(AcceptedMoments.of([(10, 2), (12, 3)])),
    }
    block = LatencyBlock(start=100.0, seconds=2.0, requests_ok=5, by_traffic=groups)
    report = LoadReport("candidate", 0, 1, 1.0, 0, 2.0, 5, 100, False, blocks=(block,))
    again = report_from_wire(json.loads(json.dumps(report_to_wire(report))))
    window = LatencySamples(blocks=again.blocks, window_seconds=2.0, shards=1)
    seen = StageObservations("s", candidate_latency=window, candidate_acceptance=COUNTS)
    status = load_status(seen)
    assert status is not None
    split = status.acceptance_by_traffic
    assert [(g.traffic_class, g.temperature, g.output_length, g.requests) for g in split] == [
        ("code", "greedy", "short", 3),
        ("support-bot", "low", "long", 2),
    ]
    assert split[0].alpha == round(51 / 35 / DRAFT_LENGTH, 4)
    assert split[1].alpha == round(5 / 22 / DRAFT_LENGTH, 4)
