"""Each event read with its neighbours (issue 29): the links, the context lane, and what a
forget takes out of them."""

from __future__ import annotations

import json
import sqlite3
import time

from conftest import Instance

from memd.protocol import Forget, Forgotten, Ingest, Ingested
from memd.store.schema import TOKENIZER, context_row


def turns(instance: Instance, cwd: str, session: str, *texts: str) -> list[int]:
    return [instance.remember(text, cwd, session=session) for text in texts]


def reply(instance: Instance, cwd: str, session: str, text: str) -> int:
    payload = {"session_id": session, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": False,
               "last_assistant_message": text, "transcript_path": "/dev/null"}  # fmt: skip
    return instance.call(
        Ingest(event="Stop", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode()), Ingested
    ).event_id


def bash(instance: Instance, cwd: str, session: str, command: str) -> int:
    payload = {
        "session_id": session, "cwd": cwd, "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
        "tool_use_id": f"t{time.time_ns()}", "transcript_path": "/dev/null",
    }  # fmt: skip
    return instance.call(
        Ingest(event="PostToolUse", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode()), Ingested
    ).event_id


def links(instance: Instance) -> dict[int, tuple[int | None, int | None]]:
    return {row[0]: (row[1], row[2]) for row in instance.query("SELECT event_id, before_id, after_id FROM event_links")}


def test_turns_link_to_the_turns_around_them_and_tools_to_their_prompt(daemon: Instance) -> None:
    cwd = f"{daemon.root}/p"
    first, second = turns(daemon, cwd, "s", "run the migration on staging", "and then the smoke tests please")
    tool = bash(daemon, cwd, "s", "alembic upgrade head")
    answer = reply(daemon, cwd, "s", "Migrated staging and the smoke tests pass.")
    other = turns(daemon, cwd, "t", "an unrelated session")[0]
    found = links(daemon)
    assert found[first] == (None, second)
    assert found[second] == (first, answer)  # the tool call between them is not a turn
    assert found[tool] == (second, None)  # the prompt that led to it
    assert found[answer] == (second, None)
    assert found[other] == (None, None)
    ((_, own, around),) = daemon.query(f"SELECT {context_row('l')} FROM event_links l WHERE event_id = ?", second)
    assert own == "and then the smoke tests please"
    assert "run the migration on staging" in around and "Migrated staging" in around


def test_a_short_answer_is_found_through_its_question_and_a_reaction_does_not_outrank_it(daemon: Instance) -> None:
    cwd = f"{daemon.root}/chat"
    _, answer, reaction = turns(
        daemon, cwd, "s",
        "Tom: Did you end up adopting that greyhound from the Riverside shelter?",
        "Priya: Yes!! We picked him up on Saturday and called him Biscuit.",
        "Tom: Cool! What does he look like?",
    )  # fmt: skip
    turns(daemon, cwd, "other", "Priya: the bakery on Main Street sells sourdough on Saturdays")
    by_context = [hit.id for hit in daemon.search("adopting greyhound", cwd=cwd, lanes=["context"]).results]
    assert answer in by_context
    assert answer not in [hit.id for hit in daemon.search("adopting greyhound", cwd=cwd, lanes=["keyword"]).results]
    ranked = [hit.id for hit in daemon.search("what did Priya call the greyhound she adopted", cwd=cwd).results]
    assert ranked.index(answer) < ranked.index(reaction)
    hit = next(h for h in daemon.search("adopting greyhound", cwd=cwd).results if h.id == answer)
    assert "greyhound" not in hit.snippet.lower()  # what is shown is the event itself, not its neighbours


def test_forgetting_a_neighbour_takes_its_words_out_of_the_others(daemon: Instance) -> None:
    cwd = f"{daemon.root}/p"
    before, secret, after = turns(daemon, cwd, "s", "what is the vault code", "it is quokkaplatypus42", "thanks!")
    assert {hit.id for hit in daemon.search("quokkaplatypus42", cwd=cwd, lanes=["context"]).results} == {
        before,
        secret,
        after,
    }
    daemon.call(Forget(ids=[str(secret)]), Forgotten)
    assert daemon.search("quokkaplatypus42", cwd=cwd, lanes=["context"]).results == []
    assert daemon.query("SELECT count(*) FROM events_ctx WHERE events_ctx MATCH 'quokkaplatypus42'") == [(0,)]
    assert links(daemon)[before] == (None, None) and links(daemon)[after] == (None, None)


def test_the_context_index_holds_exactly_what_the_links_say_after_forgets(daemon: Instance) -> None:
    """``events_ctx`` keeps no text: each removal gives the texts again.  After turns, tool calls, a
    reply and forgets in the middle of sessions, every word it indexes is where the links put it."""
    cwd = f"{daemon.root}/p"
    a = turns(daemon, cwd, "s1", "alpha bravo charlie", "delta echo foxtrot", "golf hotel india")
    bash(daemon, cwd, "s1", "juliet kilo lima")
    reply(daemon, cwd, "s1", "mike november oscar")
    b = turns(daemon, cwd, "s2", "papa quebec romeo", "sierra tango uniform")
    daemon.call(Forget(ids=[str(a[1]), str(b[0])]), Forgotten)
    turns(daemon, cwd, "s1", "victor whiskey xray")
    conn = sqlite3.connect(daemon.paths.database)
    expected = sqlite3.connect(":memory:")
    expected.execute(f"CREATE VIRTUAL TABLE x USING fts5(own, around, tokenize='{TOKENIZER}')")
    expected.executemany(
        "INSERT INTO x (rowid, own, around) VALUES (?, ?, ?)",
        conn.execute(f"SELECT {context_row('l')} FROM event_links l").fetchall(),
    )
    for db, table in ((conn, "events_ctx"), (expected, "x")):
        db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_v USING fts5vocab(main, {table}, 'instance')")

    def postings(db: sqlite3.Connection, table: str) -> set[tuple[str, int, str]]:
        return set(db.execute(f"SELECT term, doc, col FROM temp.{table}_v"))

    assert postings(conn, "events_ctx") == postings(expected, "x")
    assert not {term for term, _, _ in postings(conn, "events_ctx")} & {"delta", "echo", "papa", "quebec"}
    conn.close()


def test_events_stored_before_schema_14_are_linked_and_read_in_the_background_as_new_ones_are() -> None:
    """Migration 14 only marks what is left; ``backfill.step`` derives it a batch at a time, in
    any number of steps, with new events arriving meanwhile: the end is what live inserts give."""
    from memd.capture.prepare import NewEvent
    from memd.store.backfill import KEY, left, step
    from memd.store.events import insert_event
    from memd.store.schema import migrate

    texts = [
        ("prompt", "Caroline: did the tests in tests/test_login.py pass?"),
        ("assistant", "Not yet, KeyError"),
        ("tool", "pytest -x"),
        ("prompt", "Caroline: then fix src/app/login.py"),
        ("assistant", "Fixed PAY-91"),
    ]

    def event(n: int, kind: str, text: str) -> NewEvent:
        return NewEvent(
            idem_key=f"k{n}", event="x", kind=kind, session_id="s", cwd="/p", tool="Bash" if kind == "tool" else None,
            title=text[:40], text=text, meta="{}", payload="{}", importance=2, client_ts=float(n), received_at=float(n),
            size=len(text), truncated=False,
        )  # fmt: skip

    def derived(db: sqlite3.Connection) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
        return (db.execute("SELECT * FROM event_links ORDER BY 1").fetchall(),
                db.execute("SELECT m.event_id, e.kind, e.name FROM mentions m JOIN entities e ON e.id = m.entity_id"
                           " ORDER BY 1, 2, 3").fetchall())  # fmt: skip

    live, late = (sqlite3.connect(":memory:", isolation_level=None) for _ in range(2))
    for db in (live, late):
        migrate(db)
    for n, (kind, text) in enumerate(texts):
        insert_event(live, event(n, kind, text), None)
    for n, (kind, text) in enumerate(texts[:4]):  # stored before the migration: nothing derived
        insert_event(late, event(n, kind, text), None, derive=False)
    late.execute("INSERT INTO settings (key, value) VALUES (?, '1 4')", (KEY,))
    insert_event(late, event(4, *texts[4]), None)  # a new turn arrives before the backfill runs
    assert left(late) == 4
    while step(late, 3):
        pass
    assert left(late) == 0 and late.execute("SELECT count(*) FROM settings WHERE key = ?", (KEY,)).fetchone() == (0,)
    assert derived(late) == derived(live)


def test_the_daemon_backfills_in_the_background_while_it_serves(instance: Instance) -> None:
    from memd.store.backfill import KEY

    instance.start()
    cwd = f"{instance.root}/p"
    ids = turns(instance, cwd, "s", *(f"Caroline: turn {n} about src/app/mod{n}.py" for n in range(250)))
    assert instance.stop() == 0
    conn = sqlite3.connect(instance.paths.database, isolation_level=None)
    conn.execute("DELETE FROM event_links")  # as a store from before schema 14 had it
    conn.execute("DELETE FROM mentions")
    conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", (KEY, f"{ids[0]} {ids[-1]}"))
    conn.close()
    instance.start()
    assert instance.search("turn 3", cwd=cwd).results  # serving while it backfills
    instance.wait_for(lambda: instance.query("SELECT count(*) FROM settings WHERE key = ?", KEY) == [(0,)])
    assert instance.query("SELECT count(*) FROM event_links") == [(250,)]
    assert instance.query("SELECT count(*) FROM entities WHERE kind = 'file'") == [(250,)]
    assert instance.stop() == 0
