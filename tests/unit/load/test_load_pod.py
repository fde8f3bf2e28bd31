"""Blocks, merging, the report wire format, endpoint pushes and restart accounting."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from specdecode.domain.load_report import TOKEN_ENV, report_from_wire
from specdecode.domain.observations import AcceptedMoments, LatencyBlock
from specdecode.domain.sketch import Sketch
from specdecode_load.collector import DROPPED_REASON, Collector
from specdecode_load.config import parse_config
from specdecode_load.pod import NO_ENDPOINTS, Pod
from specdecode_load.recorder import BlockRecorder
from specdecode_load.state import RESTART_REASON

pytestmark = pytest.mark.unit


def block(start: float, gaps: list[float], ok: int = 1, seconds: float = 2.0) -> LatencyBlock:
    return LatencyBlock(
        start=start,
        seconds=seconds,
        per_chunk_itl=Sketch.of(gaps),
        requests_ok=ok,
        output_tokens=10 * ok,
        chunks=len(gaps),
        accepted=AcceptedMoments.of([(3, 1)] * ok),
    )


def test_recorder_blocks_are_wall_clock_aligned_and_events_land_by_time() -> None:
    shipped: list[LatencyBlock] = []
    recorder = BlockRecorder(0.5, shipped.append)
    now = time.perf_counter()
    recorder.chunk_gap(now, 0.02, 1, merged=False)
    recorder.chunk_gap(recorder.block_end + 0.01, 0.03, 2, merged=True)  # next block
    assert len(shipped) == 1
    first = shipped[0]
    assert first.start % 0.5 == 0 and first.seconds == 0.5
    assert first.per_chunk_itl == Sketch.of([0.02]) and first.chunks == 1
    second = recorder.close()
    assert second.start == first.start + 0.5 and second.merged_chunks == 1


def test_collector_merges_workers_and_reports_only_complete_blocks() -> None:
    done: list[LatencyBlock] = []
    collector = Collector([0, 1], max_blocks=10, on_complete=done.append)
    collector.add(0, block(100.0, [0.01, 0.02]))
    collector.add(0, block(102.0, [0.03]))
    waiting: tuple[LatencyBlock, ...] = collector.blocks
    assert waiting == ()  # worker 1 has not closed block 100 yet
    collector.add(1, block(100.0, [0.04]))
    assert [b.start for b in collector.blocks] == [100.0]
    merged = collector.blocks[0]
    assert merged.per_chunk_itl == Sketch.of([0.01, 0.02, 0.04])
    assert (merged.requests_ok, merged.chunks, merged.accepted.requests) == (2, 3, 2)
    collector.worker_done(1)  # stop waiting for an exited worker
    assert [b.start for b in done] == [100.0, 102.0]


def test_bounded_blocks_drop_the_oldest_with_one_gap() -> None:
    collector = Collector([0], max_blocks=2)
    for start in (0.0, 2.0, 4.0, 6.0):
        collector.add(0, block(start, [0.01]))
    assert [b.start for b in collector.blocks] == [4.0, 6.0]
    assert [(g.start, g.end, g.reason) for g in collector.gaps] == [(0.0, 4.0, DROPPED_REASON)]
    assert [b.start for b in collector.blocks_since(5.0)] == [6.0]


def config(tmp_path: Path, *extra: str, prompts: str = "--builtin-workload=chat") -> list[str]:
    return [
        "--side", "candidate", "--model", "m", "--concurrency", "4", "--processes", "2",
        "--max-requests", "100", "--state-dir", str(tmp_path / "state"), prompts,
        "--seed", "0", "--max-tokens", "16", "--temperature", "0", "--top-p", "1",
        "--request-timeout", "30", "--block-seconds", "2", "--allow-no-token", *extra,
    ]  # fmt: skip


def test_report_round_trips_through_the_domain_parser(tmp_path: Path) -> None:
    pod = Pod(parse_config(config(tmp_path, "--stage", "canary-10")))
    pod.progress = {0: (7, 70, False), 1: (5, 50, False)}
    pod.collector.add(0, block(100.0, [0.01]))
    pod.collector.add(1, block(100.0, [0.02, 0.03]))
    wire = json.loads(json.dumps(pod.report(since=0.0)))
    report = report_from_wire(wire)
    assert (report.side, report.processes, report.sent, report.output_tokens) == (
        "candidate", 2, 12, 120,
    )  # fmt: skip
    assert report.blocks[0].per_chunk_itl == Sketch.of([0.01, 0.02, 0.03])
    assert report.waiting_for == NO_ENDPOINTS and wire["stage"] == "canary-10"
    assert report_from_wire(pod.report(since=101.0)).blocks == ()


def test_endpoint_push_reaches_every_worker_and_bad_input_is_400(tmp_path: Path) -> None:
    class Control:
        def __init__(self) -> None:
            self.sent: list[object] = []

        def send(self, message: object) -> None:
            self.sent.append(message)

    pod = Pod(parse_config(config(tmp_path)))
    controls = {0: Control(), 1: Control()}
    pod.controls = controls  # type: ignore[assignment]
    urls = b'{"urls": ["http://10.0.0.1:8000", "http://10.0.0.2:8000/"]}'
    status, answer = pod.handle("POST", "/v1/endpoints", urls)
    assert status == 200 and answer == {"urls": ["http://10.0.0.1:8000", "http://10.0.0.2:8000"]}
    for control in controls.values():
        assert control.sent[0][0] == "endpoints" and len(control.sent[0][1]) == 2  # type: ignore[index]
    assert pod.report(0.0)["waitingFor"] is None
    assert pod.handle("POST", "/v1/endpoints", b'{"urls": ["https://x"]}')[0] == 400
    assert pod.handle("GET", "/v1/report?since=abc", b"")[0] == 400
    assert pod.handle("GET", "/healthz", b"") == (200, {"status": "ok"})


def test_the_report_echoes_the_endpoints_in_use_from_start_up_then_from_a_push(
    tmp_path: Path,
) -> None:
    started = config(tmp_path, "--endpoint", "http://10.0.0.1:8000")
    pod = Pod(parse_config(started))
    assert report_from_wire(pod.report(0.0)).endpoints == ("http://10.0.0.1:8000",)
    pod.handle("POST", "/v1/endpoints", b'{"urls": ["http://10.0.0.9:8000/"]}')
    assert report_from_wire(pod.report(0.0)).endpoints == ("http://10.0.0.9:8000",)
    bare = Pod(parse_config(config(tmp_path / "bare")))
    assert report_from_wire(bare.report(0.0)).endpoints == ()  # none: said, not unknown


def test_restart_reports_a_gap_and_continues_the_budget(tmp_path: Path) -> None:
    first = Pod(parse_config(config(tmp_path)))
    first.progress = {0: (30, 300, False), 1: (30, 300, False)}
    first.collector.add(0, block(100.0, [0.01]))
    first.collector.add(1, block(100.0, [0.02]))
    second = Pod(parse_config(config(tmp_path, "--restart-warmup-seconds", "5")))
    report = report_from_wire(second.report(since=0.0))
    assert report.restarts == 1 and report.first_boot_time == first.boot_time
    assert report.sent == 60 and report.output_tokens == 600
    assert [b.start for b in report.blocks] == [100.0]  # the first boot's block survived
    (gap,) = report.gaps
    assert gap.reason == RESTART_REASON and gap.start == 102.0
    assert gap.end >= second.boot_time + 5 and gap.end % 2 == 0
    assert sum(s.max_requests or 0 for s in second.schedules) == 40  # 100 - 60
    # blocks from the warm-up are dropped (covered by the gap), later ones kept
    second.collector.add(0, block(gap.end - 2, [0.5]))
    second.collector.add(1, block(gap.end - 2, [0.5]))
    second.collector.add(0, block(gap.end, [0.01]))
    second.collector.add(1, block(gap.end, [0.01]))
    assert [b.start for b in second.collector.blocks] == [100.0, gap.end]


def test_bad_prompt_line_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "hi"}\n{"prompt": ""}\n')
    with pytest.raises(SystemExit) as exit_info:
        parse_config(config(tmp_path, prompts=f"--prompts-file={prompts}"))
    assert exit_info.value.code == 2
    assert "line 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_config(config(tmp_path, "--endpoint", "engine:8000"))
    with pytest.raises(SystemExit):
        parse_config(config(tmp_path, "--shard", "2", "--shards", "2"))


@pytest.mark.parametrize("rate", ["inf", "nan", "0", "-1"])
def test_a_request_rate_that_is_not_a_finite_positive_number_exits_2(
    tmp_path: Path, rate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An infinite rate draws zero gaps: the open loop's catch-up could never end."""
    with pytest.raises(SystemExit) as exit_info:
        flags = config(tmp_path, "--request-rate", rate)
        parse_config([f for f in flags if f not in ("--concurrency", "4")])
    assert exit_info.value.code == 2
    assert "--request-rate must be a finite number > 0" in capsys.readouterr().err


def test_without_its_token_a_load_pod_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fail closed: an empty token would open the report and endpoint routes to anyone."""
    flags = [f for f in config(tmp_path) if f != "--allow-no-token"]
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        parse_config(flags)
    assert exit_info.value.code == 2
    assert TOKEN_ENV in capsys.readouterr().err
    monkeypatch.setenv(TOKEN_ENV, "s3cret")
    assert parse_config(flags).token == "s3cret"
    monkeypatch.delenv(TOKEN_ENV)
    assert parse_config([*flags, "--allow-no-token"]).token is None
