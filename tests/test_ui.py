"""The web viewer over HTTP: the real ``memctl ui`` process against a real daemon fed through
the hook client: who may see it, what each page shows, hostile content as text, forget."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import time
import urllib.parse
from collections.abc import Iterator

import pytest
from conftest import Instance

from memd.protocol import Ingest, Ingested

HOSTILE = 'why does the toucan build break <script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


class Viewer:
    """A running ``memctl ui``: its port and token, and requests with or without them."""

    def __init__(self, daemon: Instance, process: subprocess.Popen[str], url: str) -> None:
        self.daemon, self.process = daemon, process
        parts = urllib.parse.urlsplit(url)
        self.port = parts.port or 0
        self.token = urllib.parse.parse_qs(parts.query)["t"][0]
        self.base = parts.path
        """Every page's path starts with it (``/PREFIX/``, random per run)."""
        self.cookie = ""

    def request(
        self, method: str, path: str, *, form: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, str, dict[str, str]]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        sent = {"Host": f"127.0.0.1:{self.port}", **({"Cookie": self.cookie} if self.cookie else {}), **(headers or {})}
        body = urllib.parse.urlencode(form) if form is not None else None
        if body is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, self.base + path.removeprefix("/"), body=body, headers=sent)
        response = conn.getresponse()
        text = response.read().decode()
        got = {k.lower(): v for k, v in response.getheaders()}
        conn.close()
        if "set-cookie" in got:
            self.cookie = got["set-cookie"].split(";")[0]
        return response.status, text, got

    def get(self, path: str, **params: str) -> str:
        status, text, _ = self.request("GET", path + ("?" + urllib.parse.urlencode(params) if params else ""))
        assert status == 200, (path, status, text[:300])
        return text


@pytest.fixture
def ui(daemon: Instance) -> Iterator[Viewer]:
    project = f"{daemon.root}/project"
    daemon.remember("fix the flaky pelican login test before the release", project, session="s-ui")
    daemon.remember(HOSTILE, project, session="s-ui")
    process = subprocess.Popen(
        [*daemon.memctl_argv(), "ui", "--no-browser"], env=daemon.env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/[\w-]+/\?t=\S+", line)
        assert url, line
        yield Viewer(daemon, process, url.group())
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def test_a_request_without_the_token_or_from_another_host_is_refused(ui: Viewer) -> None:
    assert ui.request("GET", "/")[0] == 403
    assert ui.request("GET", "/?t=wrong")[0] == 403
    rebinding = ui.request("GET", f"/?t={ui.token}", headers={"Host": f"evil.example:{ui.port}"})
    assert rebinding[0] == 403  # a page whose own name resolves to 127.0.0.1
    status, _, headers = ui.request("GET", f"/?t={ui.token}")
    cookie = headers["set-cookie"].lower()
    assert status == 200 and "memd_ui=" in cookie and "httponly" in cookie and "samesite=strict" in cookie
    assert f"path={ui.base.lower()}" in cookie  # no other path of 127.0.0.1, whatever the port, gets it
    for answer in (headers, ui.request("GET", "/")[2], ui.request("GET", "/?t=wrong")[2]):  # refusals too
        assert "frame-ancestors 'none'" in answer["content-security-policy"] and answer["x-frame-options"] == "DENY"
        assert "script-src 'self';" in answer["content-security-policy"]  # no inline script, nothing from elsewhere
    assert ui.request("GET", "/search")[0] == 200  # the cookie carries the token now
    assert ui.request("POST", "/forget", form={"id": "1"}, headers={"Origin": "http://evil.example"})[0] == 403
    assert ui.request("POST", "/forget", form={"id": "1"})[0] == 403  # no origin, no referer


def test_every_page_renders_real_data_and_hostile_content_as_text(ui: Viewer) -> None:
    timeline = ui.get("/", t=ui.token)
    assert "pelican" in timeline and "toucan" in timeline
    assert "<script>window.__pwned" not in timeline and "&lt;script&gt;window.__pwned" in timeline
    found = ui.get("/search", q="pelican login")
    cite = re.findall(rf'href="{ui.base}m/(\w+)"', found)[0]  # the best hit (its neighbour in the session may follow)
    assert 'class="confidence"' in found and "found by" in found
    assert "<mark>pelican</mark>" in found and "[pelican]" not in found  # matches highlighted, not bracketed
    memory = ui.get(f"/m/{cite}")
    assert "flaky pelican login test" in memory and f"{ui.base}s/s-ui" in memory
    hostile = ui.get("/search", q="toucan")
    assert "<img src=x" not in hostile and "&lt;img src=x" in hostile
    assert "Working state it carries on" in ui.get("/s/s-ui")
    assert "Open tasks" in ui.get("/tasks")
    stats = ui.get("/stats")
    assert 'aria-label="Events per day and project, last 30 days"' in stats and ": 2 events</title>" in stats  # today
    assert "Privacy: what was kept out" in stats and "Tokens saved per day" in stats
    assert "Not found" in ui.get("/m/zzzzzz")
    rows = json.loads(ui.get("/api/rows"))
    assert any("pelican" in row["html"] for row in rows) and all("<script>" not in row["html"] for row in rows)


def test_a_forget_through_the_page_reaches_the_daemon(ui: Viewer) -> None:
    ui.get("/", t=ui.token)
    hit = ui.daemon.search("pelican", all_projects=True).results[0]
    assert "pelican" in hit.title
    preview = ui.get("/forget", id=hit.cite)
    assert "Forget 1 memory" in preview and "pelican" in preview
    origin = {"Origin": f"http://127.0.0.1:{ui.port}"}
    status, done, _ = ui.request("POST", "/forget", form={"id": hit.cite}, headers=origin)
    assert status == 200 and "Forgotten: 1 memory" in done
    assert not ui.daemon.search("pelican", all_projects=True).results
    assert json.loads(ui.daemon.memctl("search", "pelican", "--all-projects", "--json").stdout)["results"] == []


def test_mem_ids_in_text_become_links_and_nothing_else_does() -> None:
    from memd_client.ui.look import linked_cites

    html = str(linked_cites('see mem:Ab3xY9Kq, <b onclick="x()">[mem:Zz9Zz9]</b> and mem:toolong1toolong', "/p/"))
    assert html.count('<a class="cite" href="/p/m/') == 2 and "/p/m/Ab3xY9Kq" in html and "/p/m/Zz9Zz9" in html
    assert "<b" not in html and "&lt;b onclick=&#34;x()&#34;&gt;" in html


def test_a_port_in_use_is_named_not_a_traceback(daemon: Instance) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = daemon.memctl("ui", "--no-browser", "--port", str(port))
    assert (
        done.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr
    )


def test_entity_pages_list_what_memory_names_and_show_one_with_its_neighbours(ui: Viewer) -> None:
    project = f"{ui.daemon.root}/project"
    ui.daemon.remember("Priya: the <b>bakery</b> on Rua Augusta moved to src/shop/orders.py, see PAY-91", project,
                       session="s-ent")  # fmt: skip
    ui.get("/", t=ui.token)
    listing = ui.get("/entities")
    assert f'href="{ui.base}e/PAY-91"' in listing and f'href="{ui.base}e/src/shop/orders.py"' in listing
    assert "Priya" in listing
    assert "<b>bakery</b>" not in listing
    files = ui.get("/entities", kind="file")
    assert "src/shop/orders.py" in files and "PAY-91" not in files
    page = ui.get("/e/orders.py")  # an alias finds it
    assert "src/shop/orders.py" in page and "named in 1 memory of 1 session" in page
    assert f'href="{ui.base}e/PAY-91"' in page  # named with it: a neighbour, linked
    assert re.search(rf'href="{ui.base}m/[A-Za-z0-9]{{8,12}}"', page)  # the memory that names it, by its citation id
    assert "&lt;b&gt;bakery&lt;/b&gt;" in page  # what the memory says is text
    assert "no entity called &#39;nobody-we-know&#39; in any project" in ui.get("/e/nobody-we-know")


def test_another_agent_s_memories_say_which_agent(ui: Viewer) -> None:
    payload = {
        "session_id": "cx-ui",
        "turn_id": "t-1",
        "cwd": f"{ui.daemon.root}/project",
        "prompt": "bump the osprey cache",
    }
    ingest = Ingest(
        event="UserPromptSubmit", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode(), agent="codex"
    )
    assert isinstance(ui.daemon.call(ingest, Ingested), Ingested)
    assert '<span class="agent">codex</span>' in ui.get("/", t=ui.token)  # the timeline; the token opens the rest
    found = ui.get("/search", q="osprey cache")
    assert '<span class="agent">codex</span>' in found
    cite = re.findall(rf'href="{ui.base}m/(\w+)"', found)[0]
    assert '<span class="agent">codex</span>' in ui.get(f"/m/{cite}")
    assert '<span class="agent">' not in ui.get("/search", q="pelican login")  # Claude Code's say nothing


def test_a_session_s_working_state_reads_as_text_escaped_once(ui: Viewer) -> None:
    payload = {
        "session_id": "s-ui", "cwd": f"{ui.daemon.root}/project", "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash", "tool_use_id": "toolu_ui_amp", "tool_input": {"command": "cd api && make test"},
        "error": "Exit code 2\nmake: *** [test] Error 1 (x < y)",
    }  # fmt: skip
    request = Ingest(event="PostToolUseFailure", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())
    assert isinstance(ui.daemon.call(request, Ingested), Ingested)
    ui.get("/", t=ui.token)
    page = ui.get("/s/s-ui")
    working = page.split('<details class="state">')[1].split("</details>")[0]
    assert "cd api &amp;&amp; make test" in working and "&amp;amp;" not in working  # escaped once, for the page
    assert "memory-context" not in working  # what the block says, not its wrapper
