"""The streaming client's parsing and timing, fed bytes by hand on a manual clock."""

from __future__ import annotations

import math

import pytest
from loadtesting import DONE, Harness, chat_event, response, role_event, usage_event

from specdecode.domain.sketch import Sketch
from specdecode_load.connection import MAX_EVENT_BYTES

pytestmark = pytest.mark.unit

# role, then chunks adding 1, 2, 1, 3 tokens (cumulative 1, 3, 4, 7), usage, done
KNOWN = [role_event(), chat_event(1), chat_event(3), chat_event(4), chat_event(7)]
KNOWN_TAIL = [usage_event(7), DONE]
KNOWN_TIMES = [0.1, 0.2, 0.35, 0.4, 0.6]


def run_known(
    monkeypatch: pytest.MonkeyPatch, events: list[bytes], times: list[float] = KNOWN_TIMES
) -> Harness:
    h = Harness(monkeypatch)
    h.start()
    head, pieces = response(events + KNOWN_TAIL)
    h.feed(head, 0.05)
    for piece, at in zip(pieces, [*times, 0.6, 0.6], strict=True):
        h.feed(piece, at)
    return h


async def test_known_stream_gives_ttft_gaps_tpot_and_acceptance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = run_known(monkeypatch, KNOWN)
    assert h.future is not None and h.future.result() == 7
    block = h.block()
    assert (block.requests_ok, block.requests_failed, block.output_tokens) == (1, 0, 7)
    assert block.chunks == 3 and block.merged_chunks == 0
    assert block.per_chunk_itl == Sketch.of([0.15, 0.05, 0.2])
    assert block.per_token_itl == Sketch.of([0.075, 0.05, 0.2 / 3], [2, 1, 3])
    assert block.time_to_first_token == Sketch.of([0.2])
    assert block.time_per_output_token == Sketch.of([0.4 / 6])
    # n = 3 decode chunks, a = 7 - 1 (first chunk) - 3 = 3 accepted
    accepted = block.accepted
    assert (accepted.requests, accepted.steps, accepted.accepted) == (1, 3, 3)
    assert (accepted.steps_sq, accepted.accepted_steps, accepted.accepted_sq) == (9, 9, 9)
    assert not h.transport.closing  # keep-alive: reusable


async def test_tpot_divides_the_span_by_the_tokens_after_the_first_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A first chunk of 3 tokens at 0.2, then 1 and 3 tokens by 0.6: 4 tokens in 0.4 s
    (the old tokens - 1 read 0.4 / 6, flattering by a third)."""
    events = [role_event(), chat_event(3), chat_event(4), chat_event(7)]
    h = run_known(monkeypatch, events, [0.1, 0.2, 0.35, 0.6])
    assert h.block().time_per_output_token == Sketch.of([0.4 / 4])


async def test_an_answer_in_one_chunk_has_no_tpot(monkeypatch: pytest.MonkeyPatch) -> None:
    """7 tokens in one chunk: no span to time (it read 0 before)."""
    h = run_known(monkeypatch, [role_event(), chat_event(7)], [0.1, 0.2])
    block = h.block()
    assert block.requests_ok == 1 and block.time_per_output_token.total == 0


async def test_every_byte_split_gives_the_same_tokens_and_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    head, pieces = response([*KNOWN, *KNOWN_TAIL])
    data = head + b"".join(pieces)
    for split in range(1, len(data)):
        h = Harness(monkeypatch)
        h.start()
        h.feed(data[:split], 0.1)
        h.feed(data[split:], 0.2)
        block = h.block()
        assert (block.requests_ok, block.output_tokens) == (1, 7), split
        # content chunks after the first, wherever the split fell
        assert block.chunks == 3, split
        assert block.accepted.steps == 3 and block.accepted.accepted == 3, split
        # chunks read together share a timestamp: the later ones count as merged
        assert block.merged_chunks >= 1, split


async def test_events_in_one_read_share_the_stamp_and_count_as_merged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch)
    h.start()
    head, pieces = response([role_event(), chat_event(1), chat_event(2), chat_event(4), DONE])
    h.feed(head + pieces[0] + pieces[1], 0.1)
    h.feed(pieces[2] + pieces[3], 0.3)  # two steps' chunks in one read
    h.feed(pieces[4], 0.3)
    block = h.block()
    assert block.chunks == 2 and block.merged_chunks == 1
    assert block.per_chunk_itl == Sketch.of([0.2, 0.0])


async def test_usage_with_spaces_is_read_without_json(monkeypatch: pytest.MonkeyPatch) -> None:
    h = run_known(monkeypatch, [role_event(), *(chat_event(n, spaced=True) for n in (1, 3, 4, 7))])
    assert h.block().output_tokens == 7 and h.block().accepted.accepted == 3


async def test_without_usage_each_content_chunk_is_one_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch)
    h.start()
    events = [role_event(), chat_event(None), chat_event(None), chat_event(None, text="")]
    head, pieces = response([*events, usage_event(5), DONE])  # final usage: 5 in total
    h.feed(head, 0.0)
    for at, piece in enumerate(pieces, start=1):
        h.feed(piece, at * 0.1)
    block = h.block()
    assert block.chunks == 1  # the empty-content chunk adds nothing
    assert block.per_chunk_itl == Sketch.of([0.1])
    assert block.output_tokens == 5  # the usage-only chunk gives the total
    assert block.requests_ok == 1


async def test_http_error_is_a_failed_request_with_the_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch)
    h.start()
    body = b'{"error":{"message":"overloaded"}}'
    h.feed(b"HTTP/1.1 500 Internal\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body), 0.1)
    block = h.block()
    assert (block.requests_ok, block.requests_failed) == (0, 1)
    assert block.last_error is not None and block.last_error.startswith("HTTP 500")
    assert "overloaded" in block.last_error
    assert block.failures == {"http_500": 1}
    # a whole keep-alive response: the connection is reused after the backoff, not reopened
    assert not h.transport.closing
    # it held its slot 0.1 s, and that wait is one stall (no token came)
    assert block.slot_seconds == Sketch.of([0.1]) and block.per_chunk_itl == Sketch.of([0.1])


async def test_stream_without_tokens_and_lost_connection_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch)
    h.start()
    head, pieces = response([role_event(), DONE])
    h.feed(head + b"".join(pieces), 0.1)
    assert h.block().last_error == "stream ended without tokens"
    h2 = Harness(monkeypatch)
    h2.start()
    head, pieces = response([role_event(), chat_event(1), chat_event(2), DONE])
    h2.feed(head + pieces[0] + pieces[1], 0.1)
    h2.connection.connection_lost(ConnectionResetError("reset by peer"))
    block = h2.block()
    assert block.requests_failed == 1 and block.output_tokens == 1
    assert block.last_error is not None and "reset by peer" in block.last_error
    assert h2.future is not None and h2.future.result() == 1


async def test_timeout_fails_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch)
    h.future = h.connection.send(b"POST ...", timeout=0.01)
    assert await h.future == 0
    assert h.block().last_error == "timeout after 0.01s"
    assert h.transport.closing and not math.isnan(h.block().requests_failed)


async def test_usage_quoted_inside_content_is_not_mistaken_for_usage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Generated text may contain the field name; JSON escapes its quotes."""
    h = Harness(monkeypatch)
    h.start()
    tricky = chat_event(2, text='say \\"completion_tokens\\": 99')
    head, pieces = response([role_event(), chat_event(1), tricky, DONE])
    h.feed(head, 0.0)
    for at, piece in enumerate(pieces, start=1):
        h.feed(piece, at * 0.1)
    block = h.block()
    assert block.output_tokens == 2 and block.per_token_itl == Sketch.of([0.1])


async def test_a_cut_stream_adds_its_gaps_and_the_wait_that_ended_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch)
    h.start()
    head, pieces = response([role_event(), chat_event(1), chat_event(3), chat_event(4), DONE])
    h.feed(head + pieces[0], 0.05)
    h.feed(pieces[1], 0.1)  # first token at 0.1
    h.feed(pieces[2], 0.3)  # a 0.2 s gap of 2 tokens
    h.clock.now = h.start_time + 1.0
    h.connection.connection_lost(None)  # the engine closed it 0.7 s after the last chunk
    block = h.block()
    assert block.failures == {"stream_cut": 1} and block.requests_ok == 0
    assert block.per_chunk_itl == Sketch.of([0.2, 0.7])
    assert block.per_token_itl == Sketch.of([0.1, 0.7], [2, 1])
    assert block.stalls == 1 and block.chunks == 1
    assert block.time_to_first_token == Sketch.of([0.1])
    assert block.time_per_output_token == Sketch.of([(1.0 - 0.1) / 3])
    assert block.slot_seconds == Sketch.of([1.0])
    assert block.accepted.requests == 0  # acceptance only from finished requests


async def test_a_cut_stream_times_the_tokens_after_its_first_chunk_and_the_one_it_awaited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A first chunk of 3 tokens at 0.1, 2 more at 0.3, cut at 1.0: the span 0.9 s held
    the 2 tokens after the first chunk and the one it waited for (all 5 read 0.9 / 5)."""
    h = Harness(monkeypatch)
    h.start()
    head, pieces = response([role_event(), chat_event(3), chat_event(5), DONE])
    h.feed(head + pieces[0], 0.05)
    h.feed(pieces[1], 0.1)
    h.feed(pieces[2], 0.3)
    h.clock.now = h.start_time + 1.0
    h.connection.connection_lost(None)
    block = h.block()
    assert block.failures == {"stream_cut": 1}
    assert block.time_per_output_token == Sketch.of([(1.0 - 0.1) / 3])


async def test_a_hang_is_a_stall_of_the_time_since_its_last_byte(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch)
    h.start()
    head, pieces = response([role_event(), chat_event(1), chat_event(2), DONE])
    h.feed(head + pieces[0] + pieces[1], 0.1)
    h.clock.now = h.start_time + 120.0
    h.connection._timed_out(120.0)  # what the timer calls
    block = h.block()
    assert block.failures == {"timeout": 1} and block.last_error == "timeout after 120s"
    assert block.per_chunk_itl == Sketch.of([119.9]) and block.stalls == 1
    assert block.slot_seconds == Sketch.of([120.0])
    assert h.transport.closing


async def test_our_own_abort_is_not_the_engines_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch)
    h.start()
    head, pieces = response([role_event(), chat_event(1), DONE])
    h.feed(head + pieces[0] + pieces[1], 0.1)
    h.connection.close()  # the load pod shuts down
    h.connection.connection_lost(None)
    block = h.block()
    assert (block.requests_ok, block.requests_failed, block.stalls) == (0, 0, 0)
    assert h.future is not None and h.future.result() == 0


async def test_an_event_without_separator_cannot_grow_past_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch)
    h.start()
    head, _ = response([DONE])
    h.feed(head, 0.01)
    piece = b"x" * 65536
    fed = 0
    while h.future is not None and not h.future.done():
        h.feed(b"%x\r\n%s\r\n" % (len(piece), piece), 0.02)
        fed += len(piece)
        assert len(h.connection._buffer) <= MAX_EVENT_BYTES + len(piece)
    assert MAX_EVENT_BYTES < fed <= MAX_EVENT_BYTES + len(piece)
    block = h.block()
    assert block.failures == {"stream_error": 1}
    assert block.last_error is not None and "without a separator" in block.last_error
    assert h.transport.closing
