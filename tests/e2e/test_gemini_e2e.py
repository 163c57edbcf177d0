"""What the real Gemini CLI fires, memd stores: once each, its context reaching the model
(readable, not HTML-escaped), resumes keeping the user's first prompt, one memory with Codex."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import Instance

from e2e.codex import CodexUser
from e2e.fake_gemini import FakeGemini
from e2e.fake_openai import FakeOpenAI
from e2e.gemini import GeminiUser, fired, stored
from e2e.harness import assert_stored_once as same_events

SESSIONS = 30


@pytest.fixture
def user(gemini_binary: str, google: FakeGemini, daemon: Instance) -> GeminiUser:
    return GeminiUser(gemini_binary, google.url, daemon, Path(tempfile.mkdtemp(prefix="gm-", dir=daemon.root)))


def assert_stored_once(*users: GeminiUser) -> None:
    same_events(lambda: sum((fired(user) for user in users), Counter()), lambda: stored(users[0].memd))


def test_gemini_sessions_are_stored_exactly_once(user: GeminiUser, gemini_binary: str, google: FakeGemini) -> None:
    """Two users, each running every other session (Gemini CLI takes ~3 s a run): the daemon
    takes both at once, and resumes stay in each user's own sessions."""
    other = GeminiUser(gemini_binary, google.url, user.memd, Path(tempfile.mkdtemp(prefix="gm-", dir=user.memd.root)))

    def sessions(runner: GeminiUser, first: int) -> None:
        for n in range(first, SESSIONS, 2):
            steps = "\n".join(f"@bash echo step-{n}-{s}" for s in range(n % 3)) + (
                "\n@bash false" if n % 5 == 4 else ""
            )
            answer, _seconds = runner.run(f"session {n} of the soak\n{steps}\n@say finished {n}", resume=n % 7 == 6)
            assert answer == f"finished {n}"

    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(sessions, user, 0), pool.submit(sessions, other, 1)]:
            done.result()
    want = fired(user) + fired(other)
    assert {key[0] for key in want} == {"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd"}
    assert_stored_once(user, other)
    replies = user.memd.query("SELECT text FROM events WHERE agent = 'gemini' AND kind = 'assistant'")
    assert sorted(text for (text,) in replies) == sorted(f"finished {n}" for n in range(SESSIONS))  # chunks joined once
    assert not user.memd.query("SELECT 1 FROM events WHERE payload LIKE '%e2e-fake-gemini-key%'")
    assert "e2e-fake-gemini-key" not in user.memd.stderr()


def test_memd_s_context_reaches_gemini_s_model_readable(user: GeminiUser, google: FakeGemini) -> None:
    user.run("Note for later: the nightly backup lands in the s3 bucket acme-vault-eu.\n@say Noted.")
    user.run("Where does the nightly backup land?\n@say In acme-vault-eu.")
    (asked,) = google.sent("Where does the nightly backup land?")
    body = json.dumps(asked["contents"], ensure_ascii=False)
    assert "acme-vault-eu" in body and "\u2039memory-context" in body
    assert "&lt;memory-context" not in body  # Gemini CLI escapes < and >: memd writes none


def test_a_resumed_gemini_session_keeps_its_first_prompt(user: GeminiUser, google: FakeGemini) -> None:
    """Gemini CLI drops, on --resume, each stored prompt that starts with a hook's context:
    memd gives the session-start context with the first prompt's hook instead."""
    user.run("Rename the billing cron job to invoices-nightly.\n@say Renamed.")
    user.run("And what did I ask you to rename?\n@say The billing cron job.", resume=True)
    (asked,) = google.sent("And what did I ask you to rename?")
    assert "Rename the billing cron job to invoices-nightly." in json.dumps(asked["contents"])


def test_one_memory_under_gemini_and_codex(
    user: GeminiUser, google: FakeGemini, codex_binary: str, openai: FakeOpenAI, daemon: Instance
) -> None:
    other = CodexUser(codex_binary, openai.url, daemon, Path(tempfile.mkdtemp(prefix="cx-", dir=daemon.root)))
    other.project = user.project
    user.run("Decision: feature flags are read from the flagd sidecar, never from env vars.\n@say Noted.")
    other.run("Where are feature flags read from?\n@say The flagd sidecar.")
    (asked,) = openai.sent("Where are feature flags read from?")
    assert "flagd sidecar, never from env vars" in json.dumps(asked["input"])
    other.run("Decision: the staging cluster scales down to zero at 20:00 UTC.\n@say Noted.")
    user.run("When does the staging cluster scale down?\n@say At 20:00 UTC.")
    (gemini_asked,) = google.sent("When does the staging cluster scale down?")
    assert "scales down to zero at 20:00 UTC" in json.dumps(gemini_asked["contents"])


def test_memd_as_a_gemini_extension(gemini_binary: str, google: FakeGemini, daemon: Instance) -> None:
    """``memctl install --agent gemini --extension``: Gemini CLI lists memd among its extensions,
    runs its hooks (each event stored once) and gives the model memd's context."""
    root = Path(tempfile.mkdtemp(prefix="gx-", dir=daemon.root))
    user = GeminiUser(gemini_binary, google.url, daemon, root, extension=True)
    listed = subprocess.run([gemini_binary, "extensions", "list"], env=user.env, cwd=user.project, text=True,
                            capture_output=True, timeout=60)  # fmt: skip
    shown = listed.stdout + listed.stderr  # 0.61 prints the list on stderr
    assert "memd (" in shown and "Enabled (User): true" in shown, shown
    user.run("Decision: the heron importer keeps the last row of a batch.\n@bash echo kept\n@say Noted.")
    user.run("What does the heron importer do with the last row?\n@say It keeps it.")
    (asked,) = google.sent("What does the heron importer do with the last row?")
    assert "keeps the last row of a batch" in json.dumps(asked["contents"])
    assert_stored_once(user)
