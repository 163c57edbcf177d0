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
