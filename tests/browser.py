"""A real headless Chromium for tests: Debian's ``chromium``, driven through Debian's ``chromedriver``.

The viewer (``memctl ui``, issue 21) is tested as a person uses it: pages load in a real browser,
buttons are clicked, dialogs answered, and what a stored payload would run is watched for.  One
``Browser`` serves a whole test run (it starts in under a second); the ``browser`` fixture
in ``conftest.py`` hands it to each test on a blank page with nothing left from the test before.

Nothing is downloaded.  Selenium finds a driver with Selenium Manager, a program that fetches
browsers and drivers from the internet, only when it is given no driver: ``start`` always names
Debian's ``chromedriver`` (``Service(executable_path=...)``) and Debian's browser
(``binary_location``), so Selenium Manager never runs.  A missing package is a test failure that
says what to install, never a skip.

The browser runs the real binary, ``/usr/lib/chromium/chromium``, and not ``/usr/bin/chromium``:
that is Debian's shell wrapper, which adds flags for a person's desktop (Google's API keys, remote
extensions, GPU rasterization) and prints a shell error when ``findmnt`` reports two mounts.

Every wait is explicit: until an element, a dialog or a condition is there, or ``WAIT`` seconds,
then an ``AssertionError`` that says what was awaited; there is no sleep.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.wait import WebDriverWait

CHROMIUM = "/usr/lib/chromium/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL = (
    "install Debian's `chromium` and `chromium-driver` packages "
    "(`apt-get install --no-install-recommends chromium chromium-driver`; `python tests/setup_machine.py` does)"
)
VIEWPORT = (1280, 900)
"""What a page sees (``innerWidth``, ``innerHeight``), and so the size of every screenshot."""
WAIT = 10.0
"""How long an explicit wait waits: far longer than a local page takes, short enough to fail fast."""
START_TIMEOUT = 30.0
KILL_TIMEOUT = 10.0
PWNED = "__pwned"
"""The global a hostile test payload sets (``window.__pwned = 1``): read by ``Browser.pwned``."""

FLAGS = (
    "--headless=new",  # the real browser with no screen (the old mode was a separate, lesser program)
    "--disable-gpu",  # there is none: software rendering, the same on every machine
    "--force-device-scale-factor=1",  # one CSS pixel is one screenshot pixel
    "--mute-audio",
    # A blank browser with no person's features: no first-run pages, extensions or stored passwords.
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-default-apps",
    "--password-store=basic",
    # Nothing talks to the internet on its own (updates, safe browsing, metrics, translation, sync)...
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--metrics-recording-only",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
    # ... and no page can: every host but this machine's loopback fails to resolve before any DNS
    # query is made, so a page that loads something from outside shows it at once as an error.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)

SETTLE = """
const done = arguments[arguments.length - 1];
const loading = Array.from(document.images).filter((image) => !image.complete);
Promise.all(loading.map((image) => new Promise((loaded) => {
    image.addEventListener("load", loaded, {once: true});
    image.addEventListener("error", loaded, {once: true});
}))).then(() => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0))));
"""
"""Calls back once every image has loaded or failed (its ``onerror`` has run: inline handlers run
before listeners added later), two frames have been drawn and the tasks queued by then have run."""

T = TypeVar("T")


class BrowserError(AssertionError):
    """The browser is missing or did not start: a test failure, never a skip."""


@dataclass(frozen=True)
class LogEntry:
    """One line of the browser's console: ``level`` is ``SEVERE`` for errors (uncaught exceptions,
    ``console.error``, failed loads, refusals by the Content-Security-Policy); ``source`` says which
    (``javascript``, ``console-api``, ``network``, ``security``...)."""

    level: str
    source: str
    message: str


def options(chromium: str, profile: str) -> webdriver.ChromeOptions:
    """The browser's flags: ``FLAGS``, a window whose page is ``VIEWPORT`` (set again after start:
    ``--window-size`` counts the window, not the page), its own profile dir, and no sandbox as root
    (Chromium's sandbox refuses to run as root; the tests run as root here and in CI)."""
    chosen = webdriver.ChromeOptions()
    chosen.binary_location = chromium
    for flag in FLAGS:
        chosen.add_argument(flag)
    chosen.add_argument(f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}")
    chosen.add_argument(f"--user-data-dir={profile}")
    if os.geteuid() == 0:
        chosen.add_argument("--no-sandbox")
    chosen.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # console lines, read by ``console``
    return chosen


class Browser:
    """One headless Chromium and the few things a viewer test does with it; ``driver`` is
    Selenium's own for anything else.  Selectors are CSS selectors."""

    def __init__(self, driver: webdriver.Chrome, service: Service, root: str) -> None:
        self.driver = driver
        self.service = service
        self.root = root
        self.log: list[LogEntry] = []
        self.origins: set[str] = set()

    # --- life ----------------------------------------------------------------------------

    @classmethod
    def start(
        cls, *, chromium: str = CHROMIUM, chromedriver: str = CHROMEDRIVER, timeout: float = START_TIMEOUT
    ) -> Browser:
        """Start ChromeDriver and a browser, within ``timeout`` seconds or a ``BrowserError`` that
        ends both.  ChromeDriver leads a process group of its own, the browser's processes in it,
        so nothing is left behind whichever way the browser ends."""
        missing = [path for path in (chromium, chromedriver) if not os.access(path, os.X_OK)]
        if missing:
            raise BrowserError(f"no {' and no '.join(missing)}: {INSTALL}")
        root = tempfile.mkdtemp(prefix="memd-chromium-")
        # Its own config and cache dirs too: Chromium writes crash reports and dconf's cache there.
        env = {**os.environ, "XDG_CONFIG_HOME": f"{root}/config", "XDG_CACHE_HOME": f"{root}/cache"}
        service = Service(
            executable_path=chromedriver,
            log_output=f"{root}/chromedriver.log",
            env=env,
            popen_kw={"start_new_session": True},
        )
        pool = ThreadPoolExecutor(max_workers=1)
        starting = pool.submit(webdriver.Chrome, options=options(chromium, f"{root}/profile"), service=service)
        try:
            browser = cls(starting.result(timeout), service, root)
        except Exception as error:  # whatever went wrong, ChromeDriver and the browser end here
            end_group(service)
            message = getattr(error, "msg", None) or error  # a WebDriverException's, without its stack of addresses
            why = f"did not start within {timeout:g} s" if isinstance(error, FutureTimeout) else f"failed: {message}"
            log = Path(f"{root}/chromedriver.log").read_text(errors="replace")[-2000:]
            shutil.rmtree(root, ignore_errors=True)
            raise BrowserError(f"Chromium {why}\nChromeDriver's log:\n{log}") from error
        finally:
            pool.shutdown(wait=False)
        try:
            browser.size_viewport()
        except BaseException:
            browser.close()
            raise
        return browser

    def close(self) -> None:
        """Quit the browser and ChromeDriver, and remove the profile."""
        try:
            self.driver.quit()
        finally:
            end_group(self.service)
            shutil.rmtree(self.root, ignore_errors=True)

    def size_viewport(self) -> None:
        """Make the page ``VIEWPORT``: the headless window keeps room for a browser's bars."""
        width, height = self.run("return [outerWidth - innerWidth, outerHeight - innerHeight]")
        self.driver.set_window_size(VIEWPORT[0] + width, VIEWPORT[1] + height)
        seen = tuple(self.run("return [innerWidth, innerHeight]"))
        if seen != VIEWPORT:
            raise BrowserError(f"the page is {seen}, not {VIEWPORT}")

    def resize(self, width: int, height: int) -> None:
        """Make the page ``width`` by ``height`` CSS pixels (a narrow window, say) until ``reset``."""
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def dark(self, on: bool = True) -> None:
        """Pages see a system in dark mode (``prefers-color-scheme: dark``) until ``reset``."""
        features = [{"name": "prefers-color-scheme", "value": "dark" if on else "light"}]
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": features})

    def reset(self) -> None:
        """Back to a blank page: no dialog open, nothing stored by the sites opened (cookies, local
        storage, caches), no console lines kept, the viewport at ``VIEWPORT``, in light mode."""
        with contextlib.suppress(NoAlertPresentException):
            self.driver.switch_to.alert.dismiss()
        self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        self.dark(False)
        for origin in self.origins:
            self.driver.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        self.origins.clear()
        self.driver.get("about:blank")
        self.size_viewport()
        self.console()
        self.log.clear()

    # --- pages ---------------------------------------------------------------------------

    def open(self, url: str, wait_for: str = "body") -> WebElement:
        """Load ``url`` and wait until ``wait_for`` is in the page; that element."""
        parts = urlsplit(url)
        if parts.scheme in ("http", "https"):
            self.origins.add(f"{parts.scheme}://{parts.netloc}")
        self.driver.get(url)
        return self.wait_for(wait_for)

    def wait_for(self, selector: str, *, visible: bool = False, timeout: float = WAIT) -> WebElement:
        """The first element ``selector`` finds, once there is one (and it is shown, if ``visible``)."""
        locator = (By.CSS_SELECTOR, selector)
        found = ec.visibility_of_element_located(locator) if visible else ec.presence_of_element_located(locator)
        return self.wait_until(found, f"{selector!r} {'shown' if visible else 'in the page'}", timeout)

    def wait_until(
        self, condition: Callable[[webdriver.Chrome], T | Literal[False]], what: str, timeout: float = WAIT
    ) -> T:
        """``condition(driver)`` once it is true (Selenium's ``expected_conditions`` are such), or an
        ``AssertionError`` naming ``what`` was awaited."""
        try:
            return WebDriverWait(self.driver, timeout).until(condition)
        except TimeoutException:
            raise AssertionError(f"not within {timeout:g} s on {self.driver.current_url}: {what}") from None

    def wait_text(self, selector: str, text: str, timeout: float = WAIT) -> None:
        """Until ``selector``'s element shows ``text`` (within its text): after a click whose
        answer the page fetches, say."""
        shown = ec.text_to_be_present_in_element((By.CSS_SELECTOR, selector), text)
        self.wait_until(shown, f"{selector!r} showing {text!r}", timeout)

    def find_all(self, selector: str) -> list[WebElement]:
        """Every element ``selector`` finds now, without waiting: ``[]`` says there is none."""
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def text(self, selector: str) -> str:
        """The text ``selector``'s element shows, once it is in the page."""
        return self.wait_for(selector).text

    def click(self, selector: str) -> None:
        """Click ``selector``'s element once it is shown and enabled, as a person's mouse would."""
        self.wait_until(ec.element_to_be_clickable((By.CSS_SELECTOR, selector)), f"{selector!r} clickable").click()

    def fill(self, selector: str, value: str) -> None:
        """Type ``value`` into the field ``selector`` finds, in place of what it held."""
        field = self.wait_for(selector, visible=True)
        field.clear()
        field.send_keys(value)

    def confirm(self, *, accept: bool, timeout: float = WAIT) -> str:
        """Answer the ``confirm()`` (or ``alert()``) dialog the page opened, OK if ``accept`` else
        Cancel; its message.  While a dialog is open every other command fails."""
        dialog = self.wait_until(ec.alert_is_present(), "a dialog", timeout)
        message = dialog.text
        if accept:
            dialog.accept()
        else:
            dialog.dismiss()
        return message

    def run(self, script: str, *args: Any) -> Any:
        """Run ``script`` in the page as a function body with ``arguments``; what it returns."""
        return self.driver.execute_script(script, *args)

    # --- what ran ------------------------------------------------------------------------

    def console(self) -> list[LogEntry]:
        """Every console line since the last ``reset``, errors included."""
        for entry in self.driver.get_log("browser"):  # type: ignore[no-untyped-call]  # each line is handed once
            self.log.append(LogEntry(entry["level"], entry["source"], entry["message"]))
        return list(self.log)

    def errors(self) -> list[str]:
        """The console's errors since the last ``reset``: a clean page has none."""
        return [entry.message for entry in self.console() if entry.level == "SEVERE"]

    def settle(self) -> None:
        """Wait until the page is loaded, its images loaded or failed and two frames drawn: what
        the page would run on its own by then has run."""
        self.wait_until(lambda driver: driver.execute_script("return document.readyState") == "complete", "the load")
        self.driver.execute_async_script(SETTLE)

    def pwned(self, marker: str = PWNED) -> bool:
        """Whether a hostile payload ran in the page: it sets ``window[marker]`` when it does
        (``<img src=x onerror="window.__pwned=1">``).  Settles the page first, so that a handler
        the page would still run has run; a payload calling ``alert()`` fails the next command."""
        self.settle()
        return bool(self.run("return arguments[0] in window", marker))

    def screenshot(self, path: str | Path) -> Path:
        """Save what the page shows, ``VIEWPORT`` in size, as a PNG at ``path`` (its dir made)."""
        self.settle()
        saved = Path(path)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(self.driver.get_screenshot_as_png())
        return saved


def end_group(service: Service) -> None:
    """Kill ChromeDriver's process group, the browser in it, until none of it runs; then let
    Selenium reap ChromeDriver and close its log.  One kill and a wait for ChromeDriver are not
    enough: in a CI run a process of the group still ran after ChromeDriver was reaped (each
    process takes its own moment to die, and one forked while the kill was on its way is missed)."""
    process = getattr(service, "process", None)  # there is none if ChromeDriver could not be run
    if process is None:
        return
    deadline = time.monotonic() + KILL_TIMEOUT
    while members(process.pid):
        if time.monotonic() > deadline:
            raise BrowserError(f"ChromeDriver's processes outlived SIGKILL: {members(process.pid)}")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        time.sleep(0.01)  # a killed process takes a moment to end; there is nothing to wait on
    process.wait()  # reaped first: Selenium would ask a ChromeDriver that still seems to run to shut down
    service.stop()


def members(group: int) -> list[int]:
    """The processes of process group ``group`` that still run: a zombie (ended, waiting for its
    parent or init to reap it) does not."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _parent, pgrp = stat.read_text().rpartition(")")[2].split()[:3]
        except (FileNotFoundError, ProcessLookupError):  # it ended while we looked
            continue
        if int(pgrp) == group and state != "Z":
            found.append(int(stat.parent.name))
    return found
