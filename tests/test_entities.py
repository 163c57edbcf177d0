"""Entities: what events name, found without a model, kept in the store, used by search and shown
by ``memctl entities``, the MCP tool and the viewer (issue 29)."""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import Instance

from memd.capture.entities import Entity, aliases_of, extract, speaker
from memd.protocol import Entities, EntitiesResult, Forget, Forgotten, Ingest, Ingested

# --- extraction: pure ---------------------------------------------------------------------------------


def names(found: list[Entity], kind: str) -> list[str]:
    return [e.name for e in found if e.kind == kind]


def test_a_turn_names_its_speaker_and_the_people_and_places_it_mentions() -> None:
    found = extract("prompt", None, "Caroline: I went to the support group with my sister Ines in Porto.")
    assert Entity("person", "Caroline", "speaker") in found
    assert names(found, "name") == ["Ines", "Porto"]
    assert speaker("Note: the cache is cold") is None and speaker("Error: boom") is None  # labels, not people
    assert speaker("Yesterday: we went out") is None and speaker("ok: fine") is None
    assert extract("prompt", None, "Cool! What did it look like?") == []


def test_code_entities_with_their_aliases() -> None:
    text = (
        "FAILED tests/test_login.py::test_refresh_token - KeyError: 'exp'\n"
        "see https://github.com/acme/api/issues/412?token=abc and PAY-91, #77; ENOENT, TS2345"
    )
    found = extract("tool", "Bash", text, {"command": "sudo pytest -x tests/test_login.py"})
    assert names(found, "command") == ["pytest"]
    assert names(found, "file") == ["tests/test_login.py"]
    assert names(found, "error") == ["KeyError", "ENOENT", "TS2345"]
    assert names(found, "issue") == ["PAY-91", "#77"]
    assert names(found, "url") == ["https://github.com/acme/api/issues/412"]  # never the query: tokens travel there
    assert names(found, "host") == ["github.com"]
    assert "test_refresh_token" in names(found, "symbol") and "KeyError" not in names(found, "symbol")
    assert aliases_of("file", "src/app/login.py") == ["src/app/login.py", "login.py", "login"]
    assert aliases_of("person", "Caroline") == ["caroline"]
    assert aliases_of("command", "git rebase") == ["git rebase", "rebase"]


def test_definitions_imports_and_installs() -> None:
    code = "def refresh_token(user):\n    return jwtEncode(user)\nfrom rapidfuzz import fuzz\nimport os\n"
    found = extract("tool", "Edit", code, {"file_path": "/home/u/api/src/app/login.py"})
    assert names(found, "file") == ["/home/u/api/src/app/login.py"]
    assert {"refresh_token", "jwtEncode"} <= set(names(found, "symbol"))
    assert names(found, "package") == ["rapidfuzz", "os"]
    found = extract("prompt", None, 'pip install httpx==0.27 "fastapi>=0.1" and npm i @types/node react@18. UTF-8')
    assert names(found, "package") == ["httpx", "@types/node", "react"] and names(found, "person") == []
    assert names(extract("prompt", None, "UTF-8 and SHA-256 are not tickets, ISO-8601 neither"), "issue") == []


@pytest.mark.parametrize(
    "text",
    [
        "token [REDACTED:github_token] in src/[REDACTED:aws_key]/x.py",
        "[PRIVATE] at https://example.com/[REDACTED:slack_token]/hook",
        "Author: [REDACTED:email] <x@y.z>",
    ],
)
def test_no_entity_holds_a_redaction_marker(text: str) -> None:
    for entity in extract("prompt", None, text):
        assert "REDACTED" not in entity.name and "PRIVATE" not in entity.name and "slack_token" not in entity.name


# --- the store ---------------------------------------------------------------------------------------


def test_tests_and_fixes_are_edges_and_co_mentions_are_joins(instance: Instance) -> None:
    instance.start()
    cwd = f"{instance.root}/api"
    session = "s-edges"

    def tool(name: str, tool_input: dict[str, object], response: dict[str, object], event: str = "PostToolUse") -> int:
        payload = {"session_id": session, "cwd": cwd, "hook_event_name": event, "tool_name": name,
                   "tool_input": tool_input, "tool_response": response, "tool_use_id": f"t{time.time_ns()}",
                   "transcript_path": "/dev/null"}  # fmt: skip
        request = Ingest(event=event, sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())
        return instance.call(request, Ingested).event_id

    os.makedirs(cwd)
    instance.remember("fix the token refresh in src/app/login.py", cwd, session=session)
    tool("Bash", {"command": "pytest tests/test_login.py"},
         {"stdout": "", "stderr": "E   KeyError: 'exp'", "interrupted": False}, "PostToolUseFailure")  # fmt: skip
    tool("Edit", {"file_path": f"{cwd}/src/app/login.py", "old_string": "a", "new_string": "b"}, {"filePath": "x"})
    reply = instance.call(Entities(name="login.py", cwd=cwd), EntitiesResult)
    assert reply.details and {d.name for d in reply.details} >= {"src/app/login.py"}
    how = {(r.name, r.how) for d in reply.details for r in d.related}
    assert ("tests/test_login.py", "tests") in how
    assert ("KeyError", "fix") in how
    assert all(e.cite for d in reply.details for e in d.events)


def test_forgetting_its_last_event_forgets_the_entity(daemon: Instance) -> None:
    cwd = f"{daemon.root}/p"
    keep = daemon.remember("Caroline: the parser lives in src/parse/lexer.py now", cwd, session="a")
    gone = daemon.remember("Melanie: I moved the zorblax_config helper into tools/zorblax.py", cwd, session="b")
    assert daemon.query("SELECT count(*) FROM entities WHERE name = 'zorblax_config'") == [(1,)]
    daemon.call(Forget(ids=[str(gone)]), Forgotten)
    for table in ("entities", "entity_aliases"):
        column = "name" if table == "entities" else "alias"
        assert daemon.query(f"SELECT count(*) FROM {table} WHERE {column} LIKE '%zorblax%'") == [(0,)]
    assert daemon.query("SELECT count(*) FROM mentions WHERE event_id = ?", gone) == [(0,)]
    assert daemon.query("SELECT count(*) FROM mentions WHERE event_id = ?", keep) != [(0,)]
    assert daemon.call(Entities(name="melanie", cwd=cwd), EntitiesResult).details == []
    assert [d.name for d in daemon.call(Entities(name="caroline", cwd=cwd), EntitiesResult).details] == ["Caroline"]


# --- through the daemon: memctl, search, MCP ---------------------------------------------------------


def test_memctl_entities_and_search_by_entity(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    daemon.remember("Caroline: I researched adoption agencies all week", cwd, session="s1")
    daemon.remember("Melanie: I researched pottery classes near the lake", cwd, session="s1")
    daemon.remember("Caroline: the agency in Porto called back", cwd, session="s2")
    listed = daemon.memctl("entities", "--project", cwd, "--json")
    assert listed.returncode == 0, listed.stderr
    top = json.loads(listed.stdout)["entities"]
    assert {"name": "Caroline", "kind": "person", "mentions": 2} in top

    shown = daemon.memctl("entities", "caroline", "--project", cwd)
    assert shown.returncode == 0 and "person Caroline" in shown.stdout and "2 events of 2 sessions" in shown.stdout
    missing = daemon.memctl("entities", "nobody-here", "--project", cwd)
    assert missing.returncode == 0 and "no entity called 'nobody-here'" in missing.stdout

    found = daemon.memctl("search", "researched", "--project", cwd, "--entity", "Caroline", "--json")
    hits = json.loads(found.stdout)["results"]
    assert len(hits) == 1 and hits[0]["title"].startswith("Prompt: Caroline: I researched")
    explained = daemon.search("what did Caroline research", cwd=cwd)
    assert explained.results[0].entities == ["said by Caroline"]
    assert explained.results[0].features["said_by"] == 1.0


def test_events_restored_from_an_export_or_a_sync_bring_their_entities_and_neighbours() -> None:
    """``memctl import --from-export`` and the sync's apply store events through ``restore``:
    the same insert as a hook's, so entities and links come along."""
    import sqlite3

    from memd.protocol import ExportedEvent
    from memd.store.restore import restore
    from memd.store.schema import migrate

    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    rows = [
        ExportedEvent(
            cite=f"Abc{n}de",
            idem_key=f"k{n}",
            event="UserPromptSubmit",
            kind="prompt",
            session_id="s",
            project="/p",
            tool=None,
            title=f"Prompt: {text}",
            text=text,
            meta={},
            importance=2,
            client_ts=1000.0 + n,
            received_at=1000.0 + n,
        )
        for n, text in enumerate(["Caroline: the fix is in src/app/login.py", "Melanie: thanks, merging PAY-91"])
    ]
    conn.execute("BEGIN")
    assert restore(conn, rows, {}, 2000.0)[0] == 2
    conn.execute("COMMIT")
    named = {name for (name,) in conn.execute("SELECT name FROM entities")}
    assert {"Caroline", "Melanie", "src/app/login.py", "PAY-91"} <= named
    assert conn.execute("SELECT count(*) FROM event_links WHERE after_id IS NOT NULL").fetchone() == (1,)
