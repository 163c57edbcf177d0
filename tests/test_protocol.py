"""The wire schema, the sans-IO framer, and the hook client's hand-written msgpack."""

from __future__ import annotations

import json
import os

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memd.protocol import (
    NEED_DATA,
    BadRequest,
    Error,
    FrameReader,
    FrameTooLarge,
    Ingest,
    Ingested,
    Ping,
    Search,
    StatusReport,
    VersionMismatch,
    decode_reply,
    decode_request,
    encode,
    encode_frame,
)
from memd_wire import frame, handoff
from memd_wire.frame import MAX_FRAME, PROTOCOL_VERSION


def frames_of(data: bytes, chunk: int) -> list[bytes]:
    reader = FrameReader()
    out = []
    for i in range(0, len(data), chunk):
        reader.receive_data(data[i : i + chunk])
        while (body := reader.next_frame()) is not NEED_DATA:
            out.append(body)
    assert reader.buffered == 0
    return out


@pytest.mark.parametrize("chunk", [1, 3, 7, 1024])
def test_frames_survive_any_split(chunk: int) -> None:
    messages = [Ping(), Search(query="héllo wörld", limit=3), Ingest(event="Stop", sent_at_ns=1, payload=b"{}")]
    stream = b"".join(encode_frame(m) for m in messages)
    assert [decode_request(b) for b in frames_of(stream, chunk)] == messages


def test_eof_mid_frame_leaves_bytes_buffered() -> None:
    reader = FrameReader()
    reader.receive_data(encode_frame(Ping())[:-1])
    assert reader.next_frame() is NEED_DATA
    assert reader.buffered > 0


def test_oversized_length_is_refused_before_buffering() -> None:
    reader = FrameReader()
    reader.receive_data((MAX_FRAME + 1).to_bytes(4, "big"))
    with pytest.raises(FrameTooLarge, match="limit"):
        reader.next_frame()


def test_encode_frame_refuses_oversized_message() -> None:
    with pytest.raises(FrameTooLarge):
        encode_frame(Ingest(event="x", sent_at_ns=0, payload=b"x" * (MAX_FRAME + 1)))


def test_version_is_checked_before_shape() -> None:
    body = msgspec.msgpack.encode({"op": "ping", "v": PROTOCOL_VERSION + 1, "unknown": True})
    with pytest.raises(VersionMismatch, match="restart memd"):
        decode_request(body)


@pytest.mark.parametrize(
    "body",
    [
        b"\xc1",  # never-used msgpack byte
        msgspec.msgpack.encode([1, 2, 3]),
        msgspec.msgpack.encode({"v": PROTOCOL_VERSION}),  # no op
        msgspec.msgpack.encode({"op": "nope", "v": PROTOCOL_VERSION}),
        msgspec.msgpack.encode({"op": "search", "v": PROTOCOL_VERSION}),  # missing query
        msgspec.msgpack.encode({"op": "search", "v": PROTOCOL_VERSION, "query": 5}),
        msgspec.msgpack.encode({"op": "ping"}),  # no version
    ],
)
def test_bad_bodies_are_bad_requests(body: bytes) -> None:
    with pytest.raises(BadRequest):
        decode_request(body)


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    body = msgspec.msgpack.encode({"op": "search", "v": PROTOCOL_VERSION, "query": "a", "later_field": 1})
    assert decode_request(body) == Search(query="a")


def test_the_hook_clients_payload_fits_a_frame() -> None:
    assert frame.TAIL_KEEP < frame.PAYLOAD_CAP < MAX_FRAME


@given(
    event=st.text(max_size=300),
    payload=st.binary(max_size=70_000),
    size=st.integers(min_value=0, max_value=2**63),
    truncated=st.booleans(),
    position=st.sampled_from(["", "7c9e6679-7425-40de-944b-e07fc1f90ae7"]),
    native=st.sampled_from(["", "off", "recall"]),
)
def test_hook_client_frames_decode_as_ingest(
    event: str, payload: bytes, size: int, truncated: bool, position: str, native: str
) -> None:
    (body,) = frames_of(frame.ingest_frame(event, payload, size, truncated, position, native), 4096)
    request = decode_request(body)
    assert isinstance(request, Ingest)
    assert (request.event, request.payload, request.size, request.truncated) == (event, payload, size, truncated)
    assert (request.position, request.claude_memory) == (position, native)
    assert request.v == PROTOCOL_VERSION and request.sent_at_ns > 0


def test_the_hook_client_tells_what_claude_codes_memory_does_from_its_environment() -> None:
    assert frame.claude_memory_mode({}) == ""
    assert frame.claude_memory_mode({"CLAUDE_MEMORY_STORES": "[]"}) == "recall"
    assert frame.claude_memory_mode({"CLAUDE_MEMORY_STORES": "  "}) == ""
    assert frame.claude_memory_mode({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1", "CLAUDE_MEMORY_STORES": "[]"}) == "off"
    assert frame.claude_memory_mode({"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "0"}) == ""
    assert frame.claude_memory_mode({"CLAUDE_CODE_SIMPLE": "1"}) == "off"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=20) | st.dictionaries(st.text(max_size=40), inner, max_size=20),
    max_leaves=60,
)


@given(value=json_values | st.binary(max_size=70_000) | st.text(min_size=30, max_size=70_000))
def test_hook_client_reads_what_msgspec_writes(value: object) -> None:
    assert frame.decode(msgspec.msgpack.encode(value)) == value


@pytest.mark.parametrize(
    "reply",
    [
        Ingested(event_id=7, duplicate=True, stdout="ctx ✓"),
        Error(code="invalid_payload", message="bad"),
    ],
)
def test_hook_client_reads_replies(reply: Ingested | Error) -> None:
    decoded = frame.decode(encode(reply))
    assert decoded == msgspec.to_builtins(reply)
    assert decode_reply(encode(reply)) == reply


def test_status_report_round_trips() -> None:
    report = StatusReport(
        version="0", protocol=1, pid=1, uptime=0.0, socket="s", data_dir="d", database="db",
        events=1, sessions=1, projects=1, rejected=0, spool_backlog=0, db_bytes=0,
    )  # fmt: skip
    assert decode_reply(encode(report)) == report


def test_transcript_position_is_the_last_records_uuid_and_never_blocks(tmp_path) -> None:  # type: ignore[no-untyped-def]
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(
        '{"uuid":"first","message":{"content":"a \\"uuid\\":\\"quoted\\" in text"}}\n'
        '{"parentUuid":"first","type":"user","message":{"content":"x \\"uuid\\":\\"fake\\""},"uuid":"second"}\n'
    )
    payload = json.dumps({"session_id": "s", "transcript_path": str(transcript), "source": "compact"}).encode()
    assert handoff.transcript_position(payload) == "second"
    with transcript.open("a") as f:
        f.write('{"type":"system","subtype":"compact_boundary","uuid":"third"}\n')
    assert handoff.transcript_position(payload) == "third"  # a second compaction: another position
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nothing writes to it: reading would block
    for path in (str(fifo), "/dev/null", str(tmp_path / "missing.jsonl"), str(tmp_path)):
        assert handoff.transcript_position(json.dumps({"transcript_path": path}).encode()) == ""
    assert handoff.transcript_position(b'{"session_id":"s"}') == ""
