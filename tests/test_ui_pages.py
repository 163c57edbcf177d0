"""The viewer's listings over HTTP, against the real ``memctl ui`` and a real daemon: the
timeline's filters and paging from its URL, projects, sessions, a session's replay, forgetting
a session or a search's results (counted first), and what a memory names."""

from __future__ import annotations

import html
import json
import re
import time
import urllib.parse

from conftest import Instance
from test_ui import Viewer, ui  # noqa: F401  # the running viewer fixture

from memd.protocol import Ingest, Ingested


def ingest(daemon: Instance, event: str, session: str, cwd: str, *, agent: str = "claude-code",
           days_ago: float = 0.0, **payload: object) -> int:  # fmt: skip
    body = {"session_id": session, "cwd": cwd, "hook_event_name": event, "transcript_path": "/dev/null", **payload}
    if agent == "codex":
        body["turn_id"] = f"turn-{time.time_ns()}"
    sent = time.time_ns() - int(days_ago * 86400 * 1e9)
    request = Ingest(event=event, sent_at_ns=sent, payload=json.dumps(body).encode(), agent=agent)
    return ui_call(daemon, request)


def ui_call(daemon: Instance, request: Ingest) -> int:
    reply = daemon.call(request, Ingested)
    assert isinstance(reply, Ingested) and reply.event_id, reply
    return reply.event_id


def rows(page: str) -> list[int]:
    """The event ids a listing shows, in its order."""
    return [int(i) for i in re.findall(r'<(?:tr|li class="step[^"]*") data-id="(\d+)"', page)]


def link(page: str, cls: str) -> str:
    """The path of a link of class ``cls``, relative to the viewer's prefix."""
    found = re.search(rf'class="{cls}" href="([^"]+)"', page) or re.search(rf'href="([^"]+)"[^>]*class="{cls}"', page)
    assert found, f"no {cls} link"
    return html.unescape(found.group(1))


def test_the_timeline_is_filtered_and_paged_from_its_url(ui: Viewer) -> None:  # noqa: F811
    root = ui.daemon.root
    alpha, beta = f"{root}/alpha", f"{root}/beta"
    for n in range(60):
        ingest(ui.daemon, "UserPromptSubmit", f"a{n % 3}", alpha, prompt=f"alpha step {n} of the kestrel migration")
    for n in range(4):
        ingest(ui.daemon, "PostToolUseFailure", "b1", beta, tool_name="Bash", tool_use_id=f"toolu_b{n}",
               tool_input={"command": f"make wren{n}"}, error=f"Exit code 2\nwren{n} broke")  # fmt: skip
    ingest(ui.daemon, "SessionEnd", "b1", beta, reason="other")  # its summary and snapshot are taken
    for n in range(3):
        ingest(ui.daemon, "UserPromptSubmit", "cx", beta, agent="codex", prompt=f"codex asks about the shrike {n}")
    for n in range(2):
        ingest(ui.daemon, "UserPromptSubmit", "old", alpha, days_ago=10, prompt=f"an old note on the plover {n}")
    made = "('session_summary', 'snapshot', 'consolidated')"
    logged = {r[0] for r in ui.daemon.query(f"SELECT id FROM events WHERE kind NOT IN {made}")}

    first = ui.get("/", t=ui.token)
    shown = rows(first)
    assert len(shown) == 50 and shown == sorted(shown, reverse=True) and shown[0] == max(logged)
    older = ui.get(link(first, "older").removeprefix(ui.base))
    rest = rows(older)
    assert 'id="live"' not in older and not set(shown) & set(rest)
    assert set(shown) | set(rest) == logged  # every event once, nothing memd made in between
    assert ">newest</a>" in older and 'class="older"' not in older

    errors = ui.get("/", kind="tool_error")
    assert len(rows(errors)) == 4 and errors.count('title="tool_error"') == 4 and "wren" in errors
    assert 'value="tool_error" selected' in errors  # the form shows what the URL asked
    assert len(rows(ui.get("/", agent="codex"))) == 3
    assert len(rows(ui.get("/", project=beta))) == 8
    assert len(rows(ui.get("/", project=beta, agent="codex"))) == 3
    assert len(rows(ui.get("/", session="a1"))) == 20
    ten_days_ago = time.strftime("%Y-%m-%d", time.localtime(time.time() - 10 * 86400))
    today = time.strftime("%Y-%m-%d")
    assert len(rows(ui.get("/", since=ten_days_ago, until=ten_days_ago))) == 2
    assert "plover" not in ui.get("/", since=today)
    assert "Nothing matches these filters." in ui.get("/", project=beta, kind="prompt", agent="gemini")
    derived = ui.daemon.query("SELECT count(*) FROM events WHERE kind = 'snapshot'")[0][0]
    assert derived and 'title="snapshot"' not in first  # what memd made, only when asked for
    assert len(rows(ui.get("/", kind="snapshot"))) == derived

    live = json.loads(ui.get("/api/rows", agent="codex"))
    assert len(live) == 3 and all("shrike" in row["html"] for row in live)

    projects = ui.get("/projects")
    beta_row = projects.split(">beta</a>")[1].split("</tr>")[0]
    assert re.search(r'sessions\?project=[^"]+">2</a>', beta_row)  # b1 and cx
    assert re.search(r'<span class="agent" title="\d+ events">claude-code</span>', beta_row)
    assert '<span class="agent" title="3 events">codex</span>' in beta_row

    sessions = ui.get("/sessions", agent="codex")
    assert sessions.count(f'{ui.base}s/cx"') == 2 and f"{ui.base}s/b1" not in sessions
    assert f"{ui.base}s/old" in ui.get("/sessions", project=alpha) and f"{ui.base}s/b1" not in ui.get(
        "/sessions", project=alpha
    )


def test_sessions_page_through_more_than_a_page(ui: Viewer) -> None:  # noqa: F811
    for n in range(53):
        ingest(ui.daemon, "UserPromptSubmit", f"many-{n:02d}", f"{ui.daemon.root}/gull", prompt=f"gull {n}")
    first = ui.get("/sessions", t=ui.token)
    listed = re.findall(rf'{ui.base}s/(many-\d+)"', first)
    assert len(set(listed)) == 50 and listed[0] == "many-52"
    rest = re.findall(rf'{ui.base}s/([\w-]+)"', ui.get(link(first, "older").removeprefix(ui.base)))
    assert {"many-02", "many-01", "many-00", "s-ui"} <= set(rest) and not set(rest) & set(listed)


def test_a_session_replays_in_order_with_its_citations_and_folded_outputs(ui: Viewer) -> None:  # noqa: F811
    cwd = f"{ui.daemon.root}/heron"
    s = "s-replay"
    ingest(ui.daemon, "SessionStart", s, cwd, source="startup")
    prompt = ingest(ui.daemon, "UserPromptSubmit", s, cwd, prompt="why does the heron importer drop rows?")
    source = {"filePath": f"{cwd}/src/importer.py", "content": "def load(rows):\n    return rows[:-1]\n"}
    ingest(ui.daemon, "PostToolUse", s, cwd, tool_name="Read", tool_use_id="toolu_r1",
           tool_input={"file_path": source["filePath"]}, tool_response={"file": source})  # fmt: skip
    error = ingest(ui.daemon, "PostToolUseFailure", s, cwd, tool_name="Bash", tool_use_id="toolu_r2",
                   tool_input={"command": "pytest tests/test_importer.py"},
                   error="Exit code 1\nFAILED test_last_row_kept <b>")  # fmt: skip
    ingest(ui.daemon, "PreCompact", s, cwd, trigger="manual", custom_instructions="")
    ingest(ui.daemon, "PostCompact", s, cwd, trigger="manual", compact_summary="We found the off-by-one in load().")
    ingest(ui.daemon, "UserPromptSubmit", s, cwd, prompt="keep the last row then")
    uses = ui.daemon.query("SELECT count(*) FROM citation_usage")[0][0]

    page = ui.get(f"/s/{s}", t=ui.token)
    steps = rows(page)
    assert steps == sorted(steps) and prompt in steps and error in steps
    kinds = re.findall(r'<li class="step k-(\w+)', page)
    assert kinds[:2] == ["session_start", "prompt"] and kinds[-1] == "prompt"
    assert kinds.index("tool_error") < kinds.index("pre_compact") < kinds.index("compact_summary")
    assert page.count('class="step k-pre_compact compaction"') == 1
    cites = dict(ui.daemon.query("SELECT event_id, cite FROM citations"))
    assert f'href="{ui.base}m/{cites[error]}">mem:{cites[error]}</a>' in page
    failure = page.split(f'data-id="{error}"')[1].split("</li>")[0]
    assert "<details open>" in failure and "FAILED test_last_row_kept &lt;b&gt;" in failure  # errors unfolded
    read = page.split('<span class="tool">Read</span>')[1].split("</li>")[0]
    assert "<details>" in read and "return rows[:-1]" in read  # an output folded
    assert f"{ui.daemon.root}/heron/" not in page.split("<h2>Replay</h2>")[1]  # paths relative to the project
    assert "src/importer.py" in read
    assert "snapshot" not in kinds and "session_summary" not in kinds
    assert ui.daemon.query("SELECT count(*) FROM citation_usage")[0][0] == uses  # a replay is not a use


def test_an_unknown_session_is_not_found_not_a_dead_daemon(ui: Viewer) -> None:  # noqa: F811
    ui.get("/", t=ui.token)
    status, page, _ = ui.request("GET", "/s/no-such-session")
    assert status == 404 and "no session &#39;no-such-session&#39;" in page and "not answering" not in page


def test_a_long_session_replays_a_hundred_events_at_a_time(ui: Viewer) -> None:  # noqa: F811
    for n in range(103):
        ingest(ui.daemon, "UserPromptSubmit", "s-long", f"{ui.daemon.root}/long", prompt=f"step {n} of the long one")
    first = ui.get("/s/s-long", t=ui.token)
    assert len(rows(first)) == 100 and "step 0 of the long one" in first
    rest = ui.get(link(first, "older").removeprefix(ui.base))
    assert len(rows(rest)) == 3 and "step 102 of the long one" in rest and max(rows(first)) < min(rows(rest))


def test_forgetting_a_session_or_a_search_s_results_shows_the_count_first(ui: Viewer) -> None:  # noqa: F811
    cwd = f"{ui.daemon.root}/finch"
    for n in range(3):
        ingest(ui.daemon, "UserPromptSubmit", "s-finch", cwd, prompt=f"the finch cache holds {n} entries")
    ingest(ui.daemon, "UserPromptSubmit", "s-other", cwd, prompt="the finch cache is warm on boot")
    ui.get("/", t=ui.token)
    origin = {"Origin": f"http://127.0.0.1:{ui.port}"}

    preview = ui.get("/forget", session="s-finch")
    assert "<strong>3 memories</strong> of session" in preview and "Forget 3 memories" in preview
    assert ui.daemon.query("SELECT count(*) FROM events WHERE session_id = 's-finch'")[0][0] == 3  # nothing gone yet
    status, done, _ = ui.request("POST", "/forget", form={"session": "s-finch"}, headers=origin)
    assert status == 200 and "Forgotten: 3 memories" in done
    assert ui.daemon.query("SELECT count(*) FROM events WHERE session_id = 's-finch'")[0][0] == 0

    found = ui.get("/search", q="finch cache")
    ask = link(found, "danger")
    ids = urllib.parse.parse_qs(urllib.parse.urlsplit(ask).query)["ids"]
    assert "Forget these 1 memories" not in found and len(ids) == 1
    preview = ui.get(ask.removeprefix(ui.base))
    assert "<strong>1 memory</strong>" in preview and "warm on boot" in preview
    form = [("ids", i) for i in ids] + [("back", f"{ui.base}search?q=finch+cache")]
    status, done, _ = ui.request("POST", "/forget", form=dict(form), headers=origin)
    assert status == 200 and "Forgotten: 1 memory" in done and f'href="{ui.base}search?q=finch+cache"' in done
    assert not ui.daemon.query("SELECT 1 FROM events WHERE text LIKE '%finch%'")
    assert "Nothing to forget" in ui.get("/forget")


def test_a_memory_shows_what_it_names(ui: Viewer) -> None:  # noqa: F811
    cwd = f"{ui.daemon.root}/wren"
    ingest(
        ui.daemon, "UserPromptSubmit", "s-wren", cwd, prompt="Priya: src/wren/cache.py leaks on KeyError, see WREN-12"
    )
    ui.get("/", t=ui.token)
    cite = re.findall(rf'href="{ui.base}m/(\w+)"', ui.get("/search", q="wren cache leaks"))[0]
    page = ui.get(f"/m/{cite}")
    named = page.split("<h2>What it names</h2>")[1].split("</p>")[0]
    for name in ("src/wren/cache.py", "KeyError", "WREN-12", "Priya"):
        assert f'href="{ui.base}e/{urllib.parse.quote(name)}"' in named, name
