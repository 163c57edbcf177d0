"""From envelopes to events: parsing, salvage, idempotency keys, generic summaries."""

from __future__ import annotations

import json
import time

import msgspec
import pytest
from conftest import FIXTURES, hook_fixtures

from memd.capture.events import Skipped
from memd.capture.prepare import Capture, InvalidPayload, NewEvent
from memd.capture.privacy import Privacy
from memd.capture.project import project_root
from memd.capture.salvage import CUT, DEEP, read_prefix, salvage
from memd.config import Config
from memd.protocol import Ingest
from memd_wire.frame import PAYLOAD_CAP, TAIL_KEEP

CONFIG = Config()
CAPTURE = Capture(CONFIG.capture, Privacy(CONFIG.privacy))


def prepare(ingest: Ingest, received_at: float) -> NewEvent:
    event = CAPTURE.prepare(ingest, received_at)
    assert isinstance(event, NewEvent), event
    return event


def envelope(payload: bytes, event: str = "", **kw: object) -> Ingest:
    return Ingest(event=event, sent_at_ns=time.time_ns(), payload=payload, **kw)  # type: ignore[arg-type]


def load(name: str) -> bytes:
    return (FIXTURES / "hooks" / name).read_bytes()


@pytest.mark.parametrize("path", hook_fixtures(), ids=lambda p: p.name)
def test_every_real_payload_prepares(path) -> None:  # type: ignore[no-untyped-def]
    raw = path.read_bytes()
    if path.name == "hook_SubagentStop__compaction.json":  # the PostCompact event stores its summary
        assert isinstance(CAPTURE.prepare(envelope(raw, "Ignored"), 0), Skipped)
        return
    event = prepare(envelope(raw, "Ignored"), time.time())
    data = json.loads(raw)
    assert event.event == data["hook_event_name"]
    assert event.session_id == data["session_id"]
    assert event.cwd == data.get("cwd")
    assert event.title and event.kind
    assert json.loads(event.payload).keys() == data.keys()
    assert event.size == len(raw)


def test_event_name_from_argv_when_payload_lacks_it() -> None:
    assert prepare(envelope(b'{"session_id":"s"}', "Stop"), 0).event == "Stop"


def test_pre_and_post_of_one_tool_call_are_distinct() -> None:
    pre = prepare(envelope(load("hook_PreToolUse.json")), 0)
    post = prepare(envelope(load("hook_PostToolUse.json")), 0)
    assert json.loads(pre.payload)["tool_use_id"] == json.loads(post.payload)["tool_use_id"]
    assert pre.idem_key != post.idem_key


def test_repeated_hook_has_one_key_and_sibling_subagent_stops_differ() -> None:
    raw = load("hook_SubagentStop.json")
    assert prepare(envelope(raw), 0).idem_key == prepare(envelope(raw), 1).idem_key
    sibling = json.loads(raw)
    sibling["agent_id"] = "another-agent"
    other = prepare(envelope(json.dumps(sibling).encode()), 0)
    assert json.loads(raw)["prompt_id"] == sibling["prompt_id"]
    assert other.idem_key != prepare(envelope(raw), 0).idem_key


def test_tool_use_id_key_ignores_payload_differences() -> None:
    raw = json.loads(load("hook_PostToolUse.json"))
    again = {**raw, "duration_ms": 999}
    first = prepare(envelope(json.dumps(raw).encode()), 0)
    second = prepare(envelope(json.dumps(again).encode()), 0)
    assert first.idem_key == second.idem_key


def _raw(**payload: object) -> bytes:
    return json.dumps({"session_id": "s1", "cwd": "/p", "transcript_path": "/t.jsonl", **payload}).encode()


def test_identical_payloads_fired_at_two_places_in_the_transcript_are_two_events() -> None:
    # Two automatic compactions in one prompt: Claude Code fires byte-identical payloads.
    raw = _raw(hook_event_name="SessionStart", source="compact", prompt_id="p1", model="m")
    first, again = (prepare(envelope(raw, position="uuid-a"), 0) for _ in range(2))
    second = prepare(envelope(raw, position="uuid-b"), 0)
    assert first.idem_key == again.idem_key != second.idem_key  # a replay, a second registration: one
    assert prepare(envelope(raw), 0).idem_key not in (first.idem_key, second.idem_key)


def test_prompts_and_stops_are_keyed_by_prompt_id_however_they_arrive() -> None:
    live = _raw(hook_event_name="UserPromptSubmit", prompt_id="p1", prompt="fix it", permission_mode="default")
    imported = _raw(hook_event_name="UserPromptSubmit", prompt_id="p1", prompt="fix it", import_uuid="u1")
    assert (
        prepare(envelope(live), 0).idem_key
        == prepare(envelope(imported), 0).idem_key
        == "UserPromptSubmit:s1:prompt:p1"
    )
    stop = _raw(hook_event_name="Stop", prompt_id="p1", last_assistant_message="Fixed.", stop_hook_active=False)
    stop_imported = _raw(hook_event_name="Stop", prompt_id="p1", last_assistant_message="Fixed.", import_uuid="u2")
    assert prepare(envelope(stop, position="u9"), 0).idem_key == prepare(envelope(stop_imported), 0).idem_key
    # A Stop hook sent the turn back: its second Stop is another event.
    again = _raw(hook_event_name="Stop", prompt_id="p1", last_assistant_message="Fixed, really.", stop_hook_active=True)
    assert prepare(envelope(again), 0).idem_key != prepare(envelope(stop), 0).idem_key


def test_a_tool_call_has_one_key_in_any_session() -> None:
    # A fork's transcript copies its parent's calls under the fork's session id.
    call = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {}}
    parent, fork = prepare(envelope(_raw(**call)), 0), prepare(envelope(_raw(**{**call, "session_id": "s2"})), 0)
    assert parent.idem_key == fork.idem_key == "PostToolUse:tool:toolu_1"


LIVE_SUMMARY = (
    "<analysis>Scratch work.</analysis>\n<summary>1. Primary Request: fix the login test.\n2. Pending: CI.</summary>"
)
TRANSCRIPT_SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. The summary below"
    " covers the earlier portion of the conversation.\n\n<system-reminder>\n<tools-used-before-summary>Bash"
    "</tools-used-before-summary>\n</system-reminder>\nSummary:\n1. Primary Request: fix the login test.\n"
    "2. Pending: CI.\n\nIf you need specific details from before compaction (like exact code snippets), read"
    " the full transcript at: /t.jsonl\nContinue the conversation from where it left off."
)


def test_a_compaction_summary_is_its_body_with_one_key_live_or_imported() -> None:
    live = prepare(envelope(_raw(hook_event_name="PostCompact", trigger="auto", compact_summary=LIVE_SUMMARY)), 0)
    imported = prepare(
        envelope(_raw(hook_event_name="PostCompact", trigger="auto", compact_summary=TRANSCRIPT_SUMMARY)), 0
    )
    assert live.text == imported.text == "1. Primary Request: fix the login test.\n2. Pending: CI."
    assert live.idem_key == imported.idem_key and ":summary:" in live.idem_key
    # The compaction agent's stop carries the same summary: the PostCompact event stores it.
    agent = _raw(hook_event_name="SubagentStop", agent_id="a1", agent_type="", last_assistant_message=LIVE_SUMMARY)
    assert isinstance(CAPTURE.prepare(envelope(agent), 0), Skipped)
    helper = _raw(hook_event_name="SubagentStop", agent_id="a2", agent_type="", last_assistant_message="Title: x")
    assert isinstance(CAPTURE.prepare(envelope(helper), 0), NewEvent)  # another internal agent: kept


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'"text"', b"{", b"\xff\xfe"])
def test_non_object_payloads_are_invalid(raw: bytes) -> None:
    with pytest.raises(InvalidPayload):
        prepare(envelope(raw, "PostToolUse"), 0)


SURROGATE_HEAD = rb'{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"toolu_s",'


@pytest.mark.parametrize(
    ("stdout", "expected", "replaced"),
    [
        (rb"cut \ud83d", "cut \ufffd", 1),  # a high surrogate at the end of the string
        (rb"low \udc00 alone", "low \ufffd alone", 1),
        (rb"\ud83d\ude00 ok, then cut \uD83D", "\U0001f600 ok, then cut \ufffd", 1),  # the pair stays the emoji
        (rb"two highs \ud83d\ud83d\ude00", "two highs \ufffd\U0001f600", 1),
        (rb"C:\\ud83d is text, \ud83d is not", "C:\\ud83d is text, \ufffd is not", 1),  # an escaped backslash
        (rb"\udc00\ud83d", "\ufffd\ufffd", 2),  # low then high: no pair
        (b"caf\xe9 \\ud83d", "caf\ufffd \ufffd", 1),  # invalid UTF-8 as well
    ],
)
def test_lone_surrogates_become_replacement_characters(stdout: bytes, expected: str, replaced: int) -> None:
    raw = SURROGATE_HEAD + rb'"tool_input":{"command":"cat f"},"tool_response":{"stdout":"' + stdout + rb'"}}'
    event = prepare(envelope(raw, "PostToolUse"), 0)
    payload = json.loads(event.payload)
    assert payload["tool_response"]["stdout"] == expected
    assert payload["memd_lone_surrogates"] == replaced
    assert json.loads(event.meta)["lone_surrogates"] == replaced
    assert event.redactions["lone_surrogates"] == 1  # one event, counted in the status
    assert "privacy" not in json.loads(event.meta)


def test_a_valid_surrogate_pair_is_no_repair() -> None:
    raw = SURROGATE_HEAD + rb'"tool_input":{"command":"cat f"},"tool_response":{"stdout":"ok \ud83d\ude00"}}'
    event = prepare(envelope(raw, "PostToolUse"), 0)
    assert json.loads(event.payload)["tool_response"]["stdout"] == "ok \U0001f600"
    assert "memd_lone_surrogates" not in json.loads(event.payload) and "lone_surrogates" not in event.meta
    assert not event.redactions.get("lone_surrogates")


def test_a_lone_surrogate_in_broken_json_is_still_invalid() -> None:
    with pytest.raises(InvalidPayload):
        prepare(envelope(SURROGATE_HEAD + rb'"tool_response":"cut \ud83d', "PostToolUse"), 0)


def test_truncated_payload_keeps_its_identifying_fields() -> None:
    big = json.loads(load("hook_PostToolUse.json"))
    big["tool_response"]["stdout"] = "x" * 9_000_000
    raw = json.dumps(big, separators=(",", ":")).encode()
    kept = raw[: PAYLOAD_CAP - TAIL_KEEP] + raw[-TAIL_KEEP:]  # what the hook client keeps: head and tail
    event = prepare(envelope(kept, "PostToolUse", truncated=True, size=len(raw)), 0)
    payload = json.loads(event.payload)
    assert payload["session_id"] == big["session_id"]
    assert payload["tool_use_id"] == big["tool_use_id"]
    assert payload["memd_dropped"] == {
        "reason": "was cut by the hook client's size cap",
        "kept_bytes": PAYLOAD_CAP,
        "size": len(raw),
    }
    assert event.truncated and event.size == len(raw) and event.tool == "Bash"
    assert payload["tool_input"] == big["tool_input"], "the command and its description are kept"
    assert event.title == f"Bash: {big['tool_input']['command']}"
    assert payload["tool_response"]["stdout"].endswith(CUT), "the cut field says so"


def test_salvage_decodes_json_escapes() -> None:
    assert salvage(b'{"cwd":"/tmp/a \\"b\\" \\u00e9","tool_name":"Ed') == {
        "cwd": '/tmp/a "b" é',
        "tool_name": "Ed" + CUT,
    }


def test_a_cut_payload_keeps_every_field_before_the_cut_at_any_depth() -> None:
    head = (
        '{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash",'
        '"tool_input":{"command":"pytest -x tests/","description":"Run the tests","timeout":60000},'
        '"tool_response":{"exit_code":1,"interrupted":false,"stdout":"line 1\\nline 2\\u00'
    )
    assert read_prefix(head) == {
        "session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "pytest -x tests/", "description": "Run the tests", "timeout": 60000},
        "tool_response": {"exit_code": 1, "interrupted": False, "stdout": "line 1\nline 2" + CUT},
    }  # fmt: skip
    assert read_prefix('{"a":[1,{"b":null}],"c":tr') == {"a": [1, {"b": None}]}
    assert read_prefix('[{"a":1}]') is None and read_prefix("garbage") is None and read_prefix("") is None
    deep = '{"x":' * 10 + "1" + "}" * 10
    assert read_prefix(f'{{"id":"k","deep":{deep},"after":2}}', max_depth=4) == {
        "id": "k", "deep": {"x": {"x": {"x": DEEP}}}, "after": 2,
    }  # fmt: skip


def test_salvage_takes_the_tails_ids_where_the_head_has_none() -> None:
    head = b'{"session_id":"s1","tool_name":"Bash","tool_input":{"command":"make"},"tool_response":{"stdout":"'
    end = b'","stderr":""},"session_id":"nested","tool_use_id":"toolu_9"}'
    kept = head + b"x" * 300_000 + end
    payload = salvage(kept, tail=len(end) + 10)
    assert payload["tool_use_id"] == "toolu_9" and payload["session_id"] == "s1"
    assert payload["tool_input"] == {"command": "make"} and payload["tool_response"]["stdout"].endswith(CUT)


def test_truncated_garbage_is_invalid() -> None:
    with pytest.raises(InvalidPayload):
        prepare(envelope(b"\x00" * 100, "PostToolUse", truncated=True, size=10**8), 0)


def test_failures_are_important() -> None:
    assert prepare(envelope(load("hook_PostToolUseFailure.json")), 0).importance == 3
    assert prepare(envelope(load("hook_PostToolUse__docs_2025-12.json")), 0).importance == 2  # a Write
    assert prepare(envelope(load("hook_PostToolUse.json")), 0).importance == 1  # echo: trivial


def test_identifiers_are_not_searchable_text() -> None:
    event = prepare(envelope(load("hook_PostToolUse.json")), 0)
    assert "8bbcceab" not in event.text and "toolu_" not in event.text
    assert "echo hello" in event.text


def test_secrets_never_reach_any_stored_field() -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    payload = json.loads(load("hook_PostToolUse.json"))
    payload["tool_input"]["command"] = f"curl -H 'Authorization: token {secret}' https://api.github.com"
    payload["tool_response"]["stdout"] = f"<private>my diary</private> token={secret}"
    event = prepare(envelope(json.dumps(payload).encode()), 0)
    stored = json.dumps(msgspec.to_builtins(event))
    assert secret not in stored and "my diary" not in stored
    assert event.redactions["secrets"] >= 2 and event.redactions["private_spans"] == 1


def test_memd_traffic_is_skipped() -> None:
    payload = json.loads(load("hook_PostToolUse__mcp.json")) | {"tool_name": "mcp__memd__search"}
    assert CAPTURE.prepare(envelope(json.dumps(payload).encode()), 0) == Skipped("memd's own tool")


def test_project_root_is_the_git_top_level(tmp_path) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    (tmp_path / "plain").mkdir()
    assert project_root(str(repo / "src" / "deep")) == str(repo.resolve())
    assert project_root(str(tmp_path / "plain")) == str((tmp_path / "plain").resolve())
    link = tmp_path / "link"
    link.symlink_to(repo / "src")
    assert project_root(str(link)) == str(repo.resolve())
    assert project_root("/does/not/exist/anywhere") == "/does/not/exist/anywhere"


@pytest.mark.parametrize(
    ("cut", "kept"),
    [
        (r'"ab\nxyz', "ab\nxyz"),  # a whole escape near the cut stays
        (r'"ab\\de', "ab\\de"),  # an escaped backslash starts no escape
        (r'"ab\u12', "ab"),  # \uXXXX cut short
        (r'"ab\u', "ab"),
        (r'"ab\\\u1', "ab\\"),  # an escaped backslash, then \u cut short
        (r'"ab\\u12', "ab\\u12"),  # an escaped backslash, then text
        (r'"ab\\', "ab\\"),
        ('"ab' + "\\" * 81, "ab" + "\\" * 40),  # a long run: only its odd last one starts an escape
    ],
)
def test_a_string_cut_in_an_escape_keeps_what_it_holds(cut: str, kept: str) -> None:
    assert read_prefix('{"s":' + cut) == {"s": kept + CUT}


def test_a_cut_payload_with_half_an_emoji_is_stored_with_it_replaced() -> None:
    head = b'{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash",'
    head += b'"tool_input":{"command":"echo \\ud83d done"},"tool_response":{"stdout":"' + b"y" * 300_000
    kept = head + b"z" * TAIL_KEEP + b'"},"tool_use_id":"toolu_s"}'
    event = prepare(envelope(kept, "PostToolUse", truncated=True, size=10**8), 0)
    assert event.title == "Bash: echo \ufffd done" and event.redactions["lone_surrogates"] == 1
    assert json.loads(event.payload)["tool_use_id"] == "toolu_s"
