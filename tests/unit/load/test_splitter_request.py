"""What the splitter forwards of a mirrored request, and what it refuses (no I/O)."""

from __future__ import annotations

import json

import pytest

from specdecode.domain.traffic_groups import MAX_GROUPS, OTHER_GROUP, TrafficGroup
from specdecode_load.connection import request_bytes
from specdecode_load.mirror_request import GroupBook, NotMirrorable, prepare
from specdecode_load.splitter_config import parse_splitter_config

pytestmark = pytest.mark.unit


def test_a_non_streaming_request_is_forwarded_streaming_with_per_chunk_usage() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 200,
            "temperature": 0.3, "stream_options": {"include_usage": False, "x": 1}}  # fmt: skip
    request = prepare("/v1/chat/completions?trace=1", b"code", json.dumps(body).encode())
    forwarded = json.loads(request.body)
    assert forwarded["stream"] is True
    assert forwarded["stream_options"] == {
        "include_usage": True, "continuous_usage_stats": True, "x": 1
    }  # fmt: skip
    assert forwarded["messages"] == body["messages"] and forwarded["max_tokens"] == 200
    assert request.path == "/v1/chat/completions" and request.workload == "code"
    assert request.group == TrafficGroup("code", "low", "medium")


def test_completions_are_forwarded_and_defaults_band_like_openai() -> None:
    request = prepare("/v1/completions", None, b'{"model":"m","prompt":"x"}')
    assert request.path == "/v1/completions" and request.workload is None
    # no temperature: OpenAI's 1.0 (high); no max_tokens: unbounded (long)
    assert request.group == TrafficGroup("unlabelled", "high", "long")
    assert prepare("/v1/completions", b"bad label!", b"{}").workload is None


@pytest.mark.parametrize(
    ("path", "body"),
    [("/v1/embeddings", b"{}"), ("/v1/chat/completions", b"not json"),
     ("/v1/chat/completions", b"[1]")],
)  # fmt: skip
def test_what_is_not_a_completion_is_not_forwarded(path: str, body: bytes) -> None:
    with pytest.raises(NotMirrorable) as raised:
        prepare(path, None, body)
    assert "not json" not in str(raised.value)  # the body is never quoted


def test_forwarded_headers_are_rebuilt_without_the_callers() -> None:
    request = prepare("/v1/completions", b"chat", b'{"prompt":"secret prompt"}')
    sent = request_bytes("e:8000", request.body, request.workload, request.path)
    head = sent.split(b"\r\n\r\n")[0]
    names = {line.split(b":")[0].lower() for line in head.split(b"\r\n")[1:]}
    assert names == {b"host", b"content-type", b"accept", b"x-workload-class", b"content-length"}
    assert head.startswith(b"POST /v1/completions HTTP/1.1")


def test_the_groups_one_splitter_reports_are_bounded() -> None:
    book = GroupBook()
    keys = [book.key(TrafficGroup(f"c{i}", "greedy", "short")) for i in range(30)]
    assert len(set(keys)) == MAX_GROUPS and keys[-1] == OTHER_GROUP.key
    assert book.key(TrafficGroup("c0", "greedy", "short")) == "c0/greedy/short"  # kept


def test_the_splitter_fails_closed_without_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPECDECODE_LOAD_TOKEN", raising=False)
    args = ["--request-timeout", "30", "--block-seconds", "2", "--max-in-flight", "4"]
    with pytest.raises(SystemExit) as exited:
        parse_splitter_config(args)
    assert exited.value.code == 2
    config = parse_splitter_config([*args, "--allow-no-token", "--baseline", "http://b:8000"])
    assert [e.url for e in config.endpoints["baseline"]] == ["http://b:8000"]
    assert config.endpoints["candidate"] == ()
    with pytest.raises(SystemExit):
        parse_splitter_config([*args, "--allow-no-token", "--max-in-flight", "0"])
