"""What the real Claude Code fires, memd stores: once each, with the context reaching the model."""

from __future__ import annotations

from collections import Counter
from typing import Any

from e2e.harness import ClaudeCode


def signature(event: str, payload: dict[str, Any]) -> tuple[str, ...]:
    """What tells one fired event from another of the same session (two compactions in one prompt
    share every field, so the multiset of signatures is compared, not the set)."""
    keys = ("session_id", "tool_use_id", "prompt_id", "source", "agent_id", "trigger", "reason")
    return (event, *(str(payload.get(k) or "") for k in keys))


def stored(user: ClaudeCode) -> Counter[tuple[str, ...]]:
    import json

    rows = user.memd.query("SELECT event, payload FROM events WHERE event != 'memd'")
    return Counter(signature(event, json.loads(payload)) for event, payload in rows)


def fired(user: ClaudeCode, skip=lambda p: False) -> Counter[tuple[str, ...]]:
    return Counter(signature(p["_recorded_as"], p) for p in user.fired() if not skip(p))


def test_a_session_is_stored_event_for_event(user: ClaudeCode) -> None:
    target = user.project / "notes.txt"
    run = user.run(
        "Set up the cookie TTL notes\n"
        f"@write {target} the cookie TTL was 60 s\n"
        f"@edit {target}|60 s|3600 s\n"
        f"@read {target}\n"
        "@bash grep -c TTL notes.txt\n"
        "@say The cookie TTL is now 3600 s."
    )
    assert run.result.get("result") == "The cookie TTL is now 3600 s."
    assert_stored_once(user)


def assert_stored_once(user: ClaudeCode, skip=lambda p: False, timeout: float = 10.0) -> None:
    """Every event Claude Code fired is in memd's store exactly once (waiting for async hooks)."""
    import time

    deadline = time.monotonic() + timeout
    while (have := stored(user)) != (want := fired(user, skip)) and time.monotonic() < deadline:
        time.sleep(0.05)
    missing, extra = want - have, have - want
    assert not missing and not extra, f"missing (fired, not stored): {missing}\nextra (stored, not fired): {extra}"
