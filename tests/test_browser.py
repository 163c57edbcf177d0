"""The headless Chromium the viewer's tests drive (tests/browser.py), tested on a page of its own.

The page is served by the standard library on 127.0.0.1 and does what the viewer will: it shows a
list, answers clicks and a form, asks ``confirm()`` before it forgets, and shows a stored hostile
payload that it fetches, once as text (safe) and once as HTML (not): each check is shown to fail
where it should.
"""

from __future__ import annotations

import os
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from browser import PWNED, VIEWPORT, Browser, BrowserError, members
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.selenium_manager import SeleniumManager

HOSTILE = f'<script>window.{PWNED}=1</script><img src="x" onerror="window.{PWNED}=1">'
"""A stored memory that runs code if a page inserts it as HTML: the ``<script>`` never runs when
inserted through ``innerHTML``, the ``<img>``'s ``onerror`` does (``x`` is not found)."""

BACKGROUND = (0x1D, 0x35, 0x57)

PAGE = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>memd test page</title>
<style>body {{ margin: 0; padding: 1em; background: #{bytes(BACKGROUND).hex()}; color: white; }}</style>
</head><body>
<h1 id="title">Memories</h1>
<ul id="list"></ul><button id="more">More</button>
<p id="answer"></p><button id="forget">Forget</button>
<form id="search"><input id="query" value="typed before"><button id="go">Search</button></form>
<p id="searched"></p>
<button id="as-text">Show as text</button><button id="as-html">Show as HTML</button><div id="shown"></div>
<script>
const $ = (selector) => document.querySelector(selector);
$("#more").addEventListener("click", () => {{
    const item = document.createElement("li");
    item.textContent = `memory ${{$("#list").children.length + 1}}`;
    $("#list").append(item);
}});
$("#forget").addEventListener("click", () => {{
    $("#answer").textContent = confirm("Forget memory 3?") ? "forgotten" : "kept";
}});
$("#search").addEventListener("submit", (event) => {{
    event.preventDefault();
    $("#searched").textContent = `searched: ${{$("#query").value}}`;
}});
async function show(property) {{
    $("#shown")[property] = await (await fetch("/payload")).text();
    $("#shown").dataset.as = property;
}}
$("#as-text").addEventListener("click", () => show("textContent"));
$("#as-html").addEventListener("click", () => show("innerHTML"));
</script>
</body></html>
"""

BROKEN = """<!doctype html><html><head><title>broken</title></head><body><p id="here">here</p>
<script>localStorage.setItem("left", "behind"); console.log("hello from the page"); notDefined();</script>
</body></html>
"""

FILES = {"/": ("text/html", PAGE), "/broken": ("text/html", BROKEN), "/payload": ("text/plain", HOSTILE)}


class Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/favicon.ico":  # the browser asks for it; a 404 would be a console error
            self.send_response(204)
            self.end_headers()
            return
        if self.path not in FILES:
            self.send_error(404)
            return
        kind, text = FILES[self.path]
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests read what the browser saw."""


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """The test pages' base URL: ``http://127.0.0.1:PORT``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_page_renders(browser: Browser, site: str) -> None:
    assert browser.open(f"{site}/", wait_for="#title").text == "Memories"
    assert browser.driver.title == "memd test page"
    assert browser.find_all("#list li") == []
    assert browser.errors() == []


def test_a_click_changes_the_page(browser: Browser, site: str) -> None:
    browser.open(f"{site}/")
    browser.click("#more")
    browser.click("#more")
    browser.wait_text("#list li:nth-child(2)", "memory 2")
    assert [item.text for item in browser.find_all("#list li")] == ["memory 1", "memory 2"]


def test_a_form_is_filled_in_and_sent(browser: Browser, site: str) -> None:
    browser.open(f"{site}/")
    browser.fill("#query", "flaky login")
    browser.click("#go")
    browser.wait_text("#searched", "searched: flaky login")  # what the field held before is gone


def test_a_confirm_is_accepted_and_dismissed(browser: Browser, site: str) -> None:
    browser.open(f"{site}/")
    browser.click("#forget")
    assert browser.confirm(accept=True) == "Forget memory 3?"
    browser.wait_text("#answer", "forgotten")
    browser.click("#forget")
    assert browser.confirm(accept=False) == "Forget memory 3?"
    browser.wait_text("#answer", "kept")


def test_a_payload_shown_as_text_runs_nothing(browser: Browser, site: str) -> None:
    browser.open(f"{site}/")
    browser.click("#as-text")
    browser.wait_for('#shown[data-as="textContent"]')
    assert browser.text("#shown") == HOSTILE  # shown, character for character
    assert not browser.pwned()


def test_the_same_payload_shown_as_html_runs(browser: Browser, site: str) -> None:
    """The check above can fail: a page that inserts the payload as HTML is caught."""
    browser.open(f"{site}/")
    browser.click("#as-html")
    browser.wait_for('#shown[data-as="innerHTML"]')
    assert browser.pwned()


def test_the_console_and_its_errors_are_read(browser: Browser, site: str) -> None:
    browser.open(f"{site}/broken", wait_for="#here")
    assert "notDefined is not defined" in " ".join(browser.errors())
    assert any('"hello from the page"' in entry.message for entry in browser.console())
    browser.open(f"{site}/no-such-page")
    assert any("404" in error for error in browser.errors())  # lines from both pages are kept


def test_reset_leaves_nothing_behind(browser: Browser, site: str) -> None:
    browser.open(f"{site}/broken", wait_for="#here")
    browser.driver.set_window_size(640, 480)
    browser.open(f"{site}/")
    browser.click("#forget")  # a dialog left open
    browser.reset()
    assert browser.driver.current_url == "about:blank"
    assert browser.console() == []
    assert browser.run("return [innerWidth, innerHeight]") == list(VIEWPORT)
    browser.open(f"{site}/")
    assert browser.run("return localStorage.getItem('left')") is None


def test_a_page_reaches_no_host_but_this_machine(browser: Browser, site: str) -> None:
    """Without the browser's resolver rule, Chromium itself resolves ``*.localhost`` to this
    machine and the page would load: any other name is refused the same way, before DNS."""
    port = site.rpartition(":")[2]
    browser.open(f"http://localhost:{port}/", wait_for="#title")
    with pytest.raises(WebDriverException, match="ERR_NAME_NOT_RESOLVED"):
        browser.open(f"http://memd.localhost:{port}/")


def png_size_and_first_pixel(path: Path) -> tuple[tuple[int, int], tuple[int, int, int]]:
    """A PNG's width and height and its top-left pixel's colour, read by the standard library.
    Whatever filter the first row uses, its first pixel is stored as it is (nothing lies before it)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        chunks.append((data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]))
        offset += 12 + length
    kind, header = chunks[0]
    assert kind == b"IHDR"
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert (depth, colour) in ((8, 2), (8, 6)), "8-bit RGB or RGBA"
    pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    return (width, height), (pixels[1], pixels[2], pixels[3])


def test_a_screenshot_is_a_png_of_the_page(browser: Browser, site: str, tmp_path: Path) -> None:
    browser.open(f"{site}/")
    saved = browser.screenshot(tmp_path / "shots" / "page.png")
    assert png_size_and_first_pixel(saved) == (VIEWPORT, BACKGROUND)


def test_a_browser_starts_from_debian_alone_and_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Selenium Manager, which would download a driver, is never asked: it fails here if it is."""

    def no_manager(self: SeleniumManager, args: list[str]) -> dict[str, str]:
        raise AssertionError(f"Selenium Manager was asked for {args}")

    monkeypatch.setattr(SeleniumManager, "binary_paths", no_manager)
    started = Browser.start()
    try:
        assert started.driver.capabilities["browserName"] == "chrome"
        assert started.run("return navigator.userAgent").count("HeadlessChrome/") == 1
        group = started.service.process.pid
    finally:
        started.close()
    assert not os.path.exists(started.root)
    assert members(group) == []


def test_a_missing_driver_fails_and_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(BrowserError, match="chromium-driver"):
        Browser.start(chromedriver=str(tmp_path / "chromedriver"))


def test_a_browser_that_does_not_start_fails_in_time_and_is_ended(tmp_path: Path) -> None:
    """A browser that hangs (here a script that sleeps) fails the start within its timeout, and
    the hung process is ended with ChromeDriver."""
    hung = tmp_path / "chromium"
    # /proc/PID/stat: "PID (sh) STATE PARENT GROUP ...": the script writes its process group.
    hung.write_text(f"#!/bin/sh\nset -- $(cat /proc/$$/stat)\necho $5 > {tmp_path}/group\nexec sleep 60\n")
    hung.chmod(0o755)
    began = time.monotonic()
    with pytest.raises(BrowserError, match="did not start within 1 s"):
        Browser.start(chromium=str(hung), timeout=1)
    assert time.monotonic() - began < 5
    assert members(int((tmp_path / "group").read_text())) == []
