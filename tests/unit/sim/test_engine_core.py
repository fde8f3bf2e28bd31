"""Engine core with fake time: batching, queueing, spec-decode counters, n-gram realism."""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest
from simtesting import make_core, make_request, run, spec_totals

from specdecode_sim.engine import EngineCore, SpecPlan
from specdecode_sim.request import SimRequest
from specdecode_sim.textgen import TokenStream, repetition_table

pytestmark = pytest.mark.unit

CODE_PROMPT = " ".join(
    f"def handler_{i}(request): return render(request, template_{i % 3}, context)"
    for i in range(40)
)


UNIQUE_WORDS = " ".join(f"w{i}" for i in range(400))  # every n-gram occurs once


def test_max_num_seqs_bounds_the_batch_and_the_rest_waits() -> None:
    core = make_core(max_num_seqs=4)
    requests = [make_request(core, i, "hello world") for i in range(10)]
    for request in requests:
        core.add(request)
    reports = run(core)
    assert reports[0].running == 4 and reports[0].waiting == 6
    assert max(report.running for report in reports) <= 4
    assert all(len(r.output) == 64 and r.finish_reason == "length" for r in requests)


def test_eagle3_counters_are_consistent_and_alpha_matches_configuration() -> None:
    core = make_core(SpecPlan("eagle3", 3), acceptance=0.7)
    for i in range(32):
        core.add(make_request(core, i, "tell me a story", max_tokens=200))
    reports = run(core)
    drafts, draft_tokens, accepted, per_position = spec_totals(reports)
    assert draft_tokens == drafts * 3
    assert accepted <= draft_tokens
    assert per_position == sorted(per_position, reverse=True)
    assert accepted / draft_tokens == pytest.approx((0.7 + 0.49 + 0.343) / 3, abs=0.03)
    assert max(len(e.tokens) for r in reports for e in r.emissions) == 4


def test_spec_decode_shortens_the_run_at_low_concurrency() -> None:
    def total_time(core: EngineCore) -> float:
        core.add(make_request(core, 0, "tell me a story", max_tokens=300))
        return run(core)[-1].ended

    assert total_time(make_core(SpecPlan("eagle3", 3), acceptance=0.75)) < 0.7 * total_time(
        make_core()
    )


def test_ngram_acceptance_comes_from_real_repetition() -> None:
    def ngram_alpha(workload: str) -> tuple[float, EngineCore, list[SimRequest]]:
        core = make_core(SpecPlan("ngram", 5, prompt_lookup_min=2, prompt_lookup_max=4))
        requests = [make_request(core, i, CODE_PROMPT, workload, 300) for i in range(8)]
        for request in requests:
            core.add(request)
        _, draft_tokens, accepted, _ = spec_totals(run(core))
        return accepted / max(draft_tokens, 1), core, requests

    code_alpha, _, code_requests = ngram_alpha("code")
    translation_alpha, _, translation_requests = ngram_alpha("translation")
    assert code_alpha > translation_alpha + 0.15

    def repeated_4grams(request: SimRequest) -> float:
        text = request.prompt + request.output
        seen = {tuple(text[i : i + 4]) for i in range(len(request.prompt) - 3)}
        repeats = 0
        for i in range(len(request.prompt), len(text) - 3):
            gram = tuple(text[i : i + 4])
            repeats += gram in seen
            seen.add(gram)
        return repeats / len(request.output)

    assert repeated_4grams(code_requests[0]) > repeated_4grams(translation_requests[0])


def test_small_kv_cache_preempts_and_still_finishes() -> None:
    core = make_core(kv_capacity_tokens=600)
    requests = [make_request(core, i, "word " * 100, max_tokens=150) for i in range(6)]
    for request in requests:
        core.add(request)
    reports = run(core)
    assert sum(report.preemptions for report in reports) > 0
    assert all(len(r.output) == 150 for r in requests)
    assert max(report.kv_usage for report in reports) <= 1.0


def test_same_seed_same_run() -> None:
    def once() -> tuple[list[list[str]], tuple[int, int, int, list[int]]]:
        core = make_core(SpecPlan("eagle3", 4))
        requests = [make_request(core, i, "explain", max_tokens=80) for i in range(5)]
        for request in requests:
            core.add(request)
        reports = run(core)
        return [r.output for r in requests], spec_totals(reports)

    assert once() == once()


def test_natural_end_and_stop_strings_finish_with_stop() -> None:
    core = make_core(SpecPlan("eagle3", 3), acceptance=0.9)
    natural = make_request(core, 0, "hello", max_tokens=50)
    natural.ignore_eos, natural.natural_length = False, 7
    stopped = make_request(core, 1, "hello", max_tokens=50)
    target = stopped.stream.peek(10)[5]
    stopped.stop = (target,)
    core.add(natural)
    core.add(stopped)
    run(core)
    assert natural.finish_reason == "stop" and len(natural.output) == 7
    assert stopped.finish_reason == "stop" and stopped.stop_reason == target
    assert target not in stopped.output and len(stopped.output) <= 5


def test_forced_acceptance_drives_ngram_through_repetition() -> None:
    table = repetition_table({}, lookup_acceptance=0.7)
    core = make_core(SpecPlan("ngram", 4, prompt_lookup_min=3, prompt_lookup_max=5))
    requests = []
    for i in range(16):
        request = make_request(core, i, UNIQUE_WORDS, "chat", 300)
        request.stream = TokenStream(request.prompt, random.Random(f"t{i}"), table["chat"])
        requests.append(request)
        core.add(request)
    drafts, _, _, per_position = spec_totals(run(core))
    conditional = [per_position[0] / drafts] + [
        later / earlier for earlier, later in itertools.pairwise(per_position)
    ]
    assert drafts > 300
    for rate in conditional:
        assert rate == pytest.approx(0.7, abs=0.07)


def test_latency_spikes_lengthen_steps() -> None:
    def first_step(probability: float) -> float:
        config = dataclasses.replace(
            make_core().config, latency_spike_probability=probability, latency_spike_seconds=0.5
        )
        core = EngineCore(config)
        core.add(make_request(core, 0, "hi"))
        report = core.step(0.0)
        assert report is not None
        return report.duration

    plain = first_step(0.0)
    assert 0.25 <= first_step(1.0) - plain <= 0.75  # a spike of 0.5 s on average


def test_latency_spikes_vary_around_their_mean() -> None:
    """Stalled steps must not all tie: the tail gate's blocks need weight above the P99."""
    config = dataclasses.replace(
        make_core().config, latency_spike_probability=1.0, latency_spike_seconds=0.5
    )
    core = EngineCore(config)
    for i in range(200):
        core.add(make_request(core, i, "hi"))
    extra = []
    now = 0.0
    for _ in range(200):
        report = core.step(now)
        if report is None:
            break
        now += report.duration
        extra.append(report.duration)
    assert len(extra) >= 100
    assert max(extra) - min(extra) > 0.3  # spread over most of [0.25, 0.75]
