"""The web viewer in a real headless Chromium (``tests/browser.py``): the real ``memctl ui``
against a daemon fed through the real hook client.  It also takes the README's screenshots
(``docs/screenshots/``): each main page as this run rendered it."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from browser import Browser
from conftest import Instance
from test_ui import Viewer, ui  # noqa: F401  # the running viewer fixture

SHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"


def feed(daemon: Instance, project: str) -> None:
    """A short session as Claude Code would send it, through the hook client."""

    def hook(event: str, **payload: object) -> None:
        body = {"session_id": "s-browser", "cwd": project, "hook_event_name": event, "transcript_path": "/dev/null"}
        done = daemon.hook(event, json.dumps({**body, **payload}).encode())
        assert done.returncode == 0, done.stderr

    hook("SessionStart", source="startup")
    hook("UserPromptSubmit", prompt="why does the heron importer drop the last row of every batch?")
    hook(
        "PostToolUse", tool_name="Bash", tool_use_id="toolu_heron_1",
        tool_input={"command": "pytest tests/test_import.py"},
        tool_response={"stdout": "1 failed: test_last_row_kept", "stderr": "", "interrupted": False},
    )  # fmt: skip
    hook("UserPromptSubmit", prompt='<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1"> ibis')
    hook(
        "PostToolUse", tool_name="TodoWrite", tool_use_id="toolu_heron_2",
        tool_input={"todos": [{"content": "Keep the last row of a batch", "status": "in_progress",
                               "activeForm": "Keeping the last row"}]},
        tool_response={},
    )  # fmt: skip


def test_the_viewer_in_a_browser(ui: Viewer, browser: Browser) -> None:  # noqa: F811
    feed(ui.daemon, f"{ui.daemon.root}/heron")
    base = f"http://127.0.0.1:{ui.port}{ui.base.rstrip('/')}"
    browser.open(f"{base}/?t={ui.token}", wait_for="#events tbody tr")
    assert "heron importer" in browser.text("#events")
    assert not browser.pwned(), "a stored <script> ran in the timeline"
    ui.daemon.remember("the egret backfill finished at last", f"{ui.daemon.root}/heron", session="s-browser")
    browser.wait_text("#events", "egret backfill")  # appears without a reload
    browser.screenshot(SHOTS / "timeline.png")

    browser.open(f"{base}/search?q=heron+importer", wait_for=".hit")
    assert "heron importer" in browser.text(".hit .title")
    assert not browser.pwned()
    browser.screenshot(SHOTS / "search.png")

    browser.open(f"{base}/search?q=ibis", wait_for=".hit")
    assert "<script>" in browser.text(".hit .title") and not browser.pwned(), "hostile text must show, not run"

    browser.click(".hit a.cite")
    browser.wait_for("pre.text")
    cite = re.search(r"/m/(\w+)", browser.driver.current_url)
    assert cite, browser.driver.current_url
    assert not browser.pwned()
    browser.open(f"{base}/search?q=heron+importer", wait_for=".hit")
    browser.click(".hit a.cite")
    browser.wait_text("pre.text", "heron importer")
    browser.screenshot(SHOTS / "memory.png")
    browser.open(f"{base}/s/s-browser", wait_for="pre.text")
    browser.screenshot(SHOTS / "session.png")
    browser.open(f"{base}/tasks", wait_for="ul.tasks")
    assert "Keep the last row of a batch" in browser.text("ul.tasks")
    browser.screenshot(SHOTS / "tasks.png")
    browser.open(f"{base}/stats", wait_for="svg.days")
    browser.screenshot(SHOTS / "stats.png")
    assert not browser.errors(), browser.errors()

    # Forget the heron prompt through the page: the confirm() dialog, then it is gone for memctl too.
    browser.open(f"{base}/search?q=heron+importer", wait_for=".hit")
    browser.click(".hit a.cite")
    browser.click("a.danger")
    browser.click("#forget button")
    browser.confirm(accept=True)
    browser.wait_text("p.done", "Forgotten")
    found = json.loads(ui.daemon.memctl("search", "heron importer", "--all-projects", "--json").stdout)
    assert not [hit for hit in found["results"] if "heron importer" in hit["title"]]

    # Without the token, the browser gets nothing (a fresh profile has no cookie).
    browser.reset()
    browser.driver.delete_all_cookies()
    browser.open(f"{base}/search?q=heron")
    assert "403 Forbidden" in browser.text("body")


def test_no_other_local_page_can_frame_the_viewer_or_get_its_cookie(ui: Viewer, browser: Browser) -> None:  # noqa: F811
    """Another server on 127.0.0.1 (another port is the same site, and cookies ignore ports)
    frames the viewer, to overlay its Forget button, and reads what cookies it is sent."""
    viewer = f"http://127.0.0.1:{ui.port}{ui.base}"
    browser.open(f"{viewer}?t={ui.token}", wait_for="#events")  # the token is in the viewer's cookie now
    cookies: list[str] = []

    class Other(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            cookies.append(self.headers.get("Cookie") or "")
            body = f'<!doctype html><title>other</title><iframe id="framed" src="{viewer}"></iframe>'.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        browser.open(f"http://127.0.0.1:{other.server_port}/", wait_for="#framed")
        browser.settle()
        browser.driver.switch_to.frame("framed")
        framed = browser.driver.page_source
        browser.driver.switch_to.default_content()
    finally:
        other.shutdown()
        other.server_close()
    assert cookies and not any("memd_ui" in c for c in cookies), cookies
    assert "memd" not in framed and "heron" not in framed, "the viewer rendered inside another page"
    assert any("frame-ancestors" in m for m in browser.errors()), browser.errors()


def feed_work(daemon: Instance, project: str) -> None:
    """A session with a file read and edited, an error, a compaction and a fix, through the hook client."""

    def hook(event: str, **payload: object) -> None:
        body = {"session_id": "s-work", "cwd": project, "hook_event_name": event, "transcript_path": "/dev/null"}
        done = daemon.hook(event, json.dumps({**body, **payload}).encode())
        assert done.returncode == 0, done.stderr

    source = f"{project}/src/heron/importer.py"
    hook("SessionStart", source="startup")
    hook("UserPromptSubmit", prompt="the heron importer raises KeyError on the last batch; fix it")
    code = "def batches(rows):\n    return rows['last']\n"
    hook("PostToolUse", tool_name="Read", tool_use_id="toolu_w1", tool_input={"file_path": source},
         tool_response={"file": {"filePath": source, "content": code}})  # fmt: skip
    hook("PostToolUseFailure", tool_name="Bash", tool_use_id="toolu_w2",
         tool_input={"command": "pytest tests/test_importer.py"},
         error="Exit code 1\nKeyError: 'last' in src/heron/importer.py line 2")  # fmt: skip
    hook("PreCompact", trigger="manual", custom_instructions="")
    hook("PostCompact", trigger="manual", compact_summary="The importer indexes rows by a missing 'last' key.")
    hook("PostToolUse", tool_name="Edit", tool_use_id="toolu_w3",
         tool_input={"file_path": source, "old_string": "rows['last']", "new_string": "rows[-1]"},
         tool_response={"filePath": source, "oldString": "rows['last']", "newString": "rows[-1]"})  # fmt: skip
    hook("UserPromptSubmit", prompt="run tests/test_importer.py again and tell Priya the KeyError is gone")
    hook("Stop", stop_hook_active=False, last_assistant_message="Fixed: batches() takes rows[-1]; tests pass.")


def test_sessions_replays_entities_and_filters_in_a_browser(ui: Viewer, browser: Browser) -> None:  # noqa: F811
    project = f"{ui.daemon.root}/heron"
    feed_work(ui.daemon, project)
    for n in range(55):  # more than a page
        ui.daemon.remember(f"heron note {n}: batches stay ordered", project, session="s-notes")
    base = f"http://127.0.0.1:{ui.port}{ui.base.rstrip('/')}"
    browser.open(f"{base}/?t={ui.token}", wait_for="#events tbody tr")

    # Filters and paging from the URL: a kind picked in the form, then the next page keeps it.
    browser.run("document.querySelector('select[name=kind]').value = 'prompt'")
    browser.click(".filters button")
    browser.wait_until(lambda d: "kind=prompt" in d.current_url, "the filter in the URL")
    assert {c.get_attribute("title") for c in browser.find_all("#events .chip")} == {"prompt"}
    browser.click("a.older")
    browser.wait_until(lambda d: "before=" in d.current_url and "kind=prompt" in d.current_url, "page 2")
    assert {c.get_attribute("title") for c in browser.find_all("#events .chip")} == {"prompt"}
    assert browser.find_all("#events tbody tr") and not browser.find_all("#live")  # page 2 is not live

    browser.open(f"{base}/sessions", wait_for="table.sessions")
    assert "s-work" in browser.driver.page_source and "heron" in browser.text("table.sessions")
    browser.screenshot(SHOTS / "sessions.png")
    browser.open(f"{base}/projects", wait_for="table.projects")
    assert "heron" in browser.text("table.projects")
    browser.screenshot(SHOTS / "projects.png")

    # The replay: every step in order, outputs folded until clicked, the compaction marked.
    browser.open(f"{base}/s/s-work", wait_for="ol.replay")
    kinds = [li.get_attribute("class") for li in browser.find_all("ol.replay > li")]
    assert [k.split()[1] for k in kinds][:3] == ["k-session_start", "k-prompt", "k-tool"], kinds
    assert any("compaction" in k for k in kinds) and "KeyError" in browser.text("ol.replay .k-tool_error")
    read = browser.find_all("ol.replay .k-tool details")[0]
    assert read.get_attribute("open") is None and not read.find_element("css selector", "pre").is_displayed()
    read.find_element("css selector", "summary").click()
    browser.wait_until(lambda d: read.find_element("css selector", "pre").is_displayed(), "the output unfolded")
    assert "rows['last']" in read.text and project not in browser.text("ol.replay")  # paths relative
    browser.screenshot(SHOTS / "session.png")
    browser.dark()
    browser.open(f"{base}/s/s-work", wait_for="ol.replay")
    background = browser.run("return getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(15, 20, 25)", background  # the dark theme, as the system asks
    browser.screenshot(SHOTS / "session-dark.png")
    browser.dark(False)

    # An entity: what memd knows of the file, what it goes with drawn as a graph, each node a link.
    browser.open(f"{base}/e/src/heron/importer.py", wait_for="svg.graph")
    assert "importer.py" in browser.text("h1")
    linked = browser.run("return [...document.querySelectorAll('svg.graph a')].map(a => a.getAttribute('href'))")
    assert any(href.endswith("/e/KeyError") for href in linked), linked
    browser.screenshot(SHOTS / "entity.png")
    browser.run(  # a click on the node's link, as a mouse would
        "[...document.querySelectorAll('svg.graph a')].find(a => a.getAttribute('href').endsWith('/e/KeyError'))"
        ".dispatchEvent(new MouseEvent('click', {bubbles: true}))"
    )
    browser.wait_until(lambda d: d.current_url.endswith("/e/KeyError"), "the node's entity page")
    assert "KeyError" in browser.text("h1")

    # A narrow window: nothing wider than the window, the rows still readable.
    browser.resize(420, 860)
    browser.open(f"{base}/", wait_for="#events tbody tr")
    assert browser.run("return document.documentElement.scrollWidth <= innerWidth + 1")
    browser.screenshot(SHOTS / "timeline-narrow.png")
    assert not browser.errors(), browser.errors()
    assert not browser.pwned()
