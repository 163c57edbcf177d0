"""Real instances for tests: a memd subprocess on a private XDG root, the real hook client, a
PostgreSQL server, a headless Chromium.

Paths are kept short (a ``/tmp/memd-t-*`` root) because Unix socket paths are
limited to ~104 bytes and pytest's tmp_path can be longer.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import Browser
from pg import PgDatabase, PgServer, pgvector_bindir

from memd.instance import holder
from memd.protocol import Ingest, Ingested, Ping, Pong, Request, Search, SearchResults, Status, StatusReport
from memd_client.rpc import Client, DaemonUnavailable, R
from memd_wire.autostart import is_locked
from memd_wire.launcher import HOOK_SCRIPT
from memd_wire.paths import Paths, resolve

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
FIXTURES = SHARED / "fixtures" / "claude-code"
HOOK_FILE = HOOK_SCRIPT
PYTHON = os.path.abspath(sys.executable)


def hook_fixtures() -> list[Path]:
    files = sorted((FIXTURES / "hooks").glob("hook_*.json"))
    assert files, f"shared fixtures missing: {FIXTURES}"  # CI has ../shared beside the checkout
    return files


NOT_STORED = frozenset({"hook_SubagentStop__compaction.json"})
"""Fixtures memd receives and does not store: the compaction agent's stop (the PostCompact
event stores its summary)."""


def stored_fixtures() -> list[Path]:
    """The hook fixtures memd stores an event for."""
    return [p for p in hook_fixtures() if p.name not in NOT_STORED]


class Instance:
    """One isolated memd: its environment, paths, and (when started) its process."""

    def __init__(self, root: str, *, embedding: bool = False) -> None:
        self.root = root
        self.embedding = embedding
        self.env = {
            **os.environ,
            "XDG_RUNTIME_DIR": f"{root}/run",
            "XDG_DATA_HOME": f"{root}/data",
            "XDG_STATE_HOME": f"{root}/state",
            "XDG_CONFIG_HOME": f"{root}/config",
        }
        for var in ("MEMD_SOCKET", "MEMD_DATA_DIR", "MEMD_HOOK_TIMEOUT"):
            self.env.pop(var, None)
        # A client that finds no daemon starts one (memd_wire/autostart.py): tests that want
        # that say so; every other test's daemon is the one it starts and stops itself.
        self.env["MEMD_AUTOSTART"] = "0"
        os.makedirs(self.env["XDG_RUNTIME_DIR"], mode=0o700)
        self.paths: Paths = resolve(env=self.env)
        self.process: subprocess.Popen[bytes] | None = None
        self.stderr_file = f"{root}/memd.stderr"
        self.configure()

    def configure(self, toml: str = "") -> None:
        """Write the config file.  The embedding model stays off unless the instance asked
        for it: loading it costs a second of CPU per daemon, which most tests never use.
        So does the daily retention pass unless the config names ``[retention]``: what it
        removes depends on the day the tests run (fixtures and payloads carry fixed dates)."""
        if not self.embedding and "[embedding]" not in toml:
            toml += "\n[embedding]\nenabled = false\n"
        if "[retention]" not in toml:
            toml += "\n[retention]\nenabled = false\n"
        os.makedirs(os.path.dirname(self.paths.config_file), exist_ok=True)
        with open(self.paths.config_file, "w") as f:
            f.write(toml)

    # --- daemon -------------------------------------------------------------------------

    def start(self, *args: str, wait: bool = True, files: tuple[int, int] | None = None) -> subprocess.Popen[bytes]:
        """Start the daemon; ``files``: its (soft, hard) limit on open files."""

        def limit() -> None:
            if files is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, files)

        # stderr to a file, not a pipe: a full pipe would block the daemon's logging.
        with open(self.stderr_file, "ab") as stderr:
            self.process = subprocess.Popen(
                [PYTHON, "-m", "memd", *args], env=self.env, stdout=subprocess.DEVNULL, stderr=stderr,
                preexec_fn=limit if files is not None else None,
            )  # fmt: skip
        if wait:
            self.wait_ready()
        return self.process

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"memd exited early: {self.stderr()}")
            try:
                self.call(Ping(), Pong)
                return
            except DaemonUnavailable:
                time.sleep(0.02)
        raise AssertionError("memd did not answer in time")

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then wait; returns the exit status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self.process = None

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        self.process = None

    def stderr(self) -> str:
        with open(self.stderr_file, encoding="utf-8", errors="replace") as f:
            return f.read()

    def logged(self, event: str) -> list[dict[str, Any]]:
        """The daemon's log records of ``event`` so far (its JSON lines on stderr)."""
        records = [json.loads(line) for line in self.stderr().splitlines() if line.startswith("{")]
        return [r for r in records if r.get("event") == event]

    def call(self, request: Request, expect: type[R]) -> R:
        with Client(self.paths.socket, timeout=10.0) as client:
            return client.call(request, expect)

    def status(self) -> StatusReport:
        return self.call(Status(), StatusReport)

    # --- clients ------------------------------------------------------------------------

    def hook(
        self, event: str, stdin: bytes | None, timeout: float = 30.0, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """Run the real hook client as Claude Code does."""
        return subprocess.run(
            [PYTHON, "-I", "-S", HOOK_FILE, event],
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            env={**self.env, **(env or {})},
            timeout=timeout,
        )

    def memctl_argv(self) -> list[str]:
        return [PYTHON, "-m", "memd_client.memctl"]

    def memctl(self, *args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.memctl_argv(), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
            cwd=cwd,
        )

    def remember(self, text: str, cwd: str, *, session: str = "s-test", age_days: float = 0.0) -> int:
        """Store ``text`` as a prompt of the project at ``cwd`` (created), ``age_days`` old; its event id."""
        os.makedirs(cwd, exist_ok=True)
        payload = {
            "session_id": session,
            "cwd": cwd,
            "hook_event_name": "UserPromptSubmit",
            "prompt": text,
            "transcript_path": "/dev/null",
        }
        sent = time.time_ns() - int(age_days * 86400 * 1e9)
        request = Ingest(event="UserPromptSubmit", sent_at_ns=sent, payload=json.dumps(payload).encode())
        return self.call(request, Ingested).event_id

    def search(self, query: str, **options: Any) -> SearchResults:
        return self.call(Search(query=query, **options), SearchResults)

    def wait_embedded(self, timeout: float = 120.0) -> None:
        """Until the model is ready and every event has its vectors."""

        def done() -> bool:
            embedding = self.status().embedding
            return embedding is not None and embedding.state == "ready" and embedding.backlog == 0

        self.wait_for(done, timeout=timeout, interval=0.1)

    # --- direct looks at the files -------------------------------------------------------

    def spooled(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.paths.spool_dir) if n.endswith(".frame"))
        except FileNotFoundError:
            return []

    def query(self, sql: str, *args: object) -> list[tuple]:
        conn = sqlite3.connect(f"file:{self.paths.database}?mode=ro", uri=True)
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    def wait_for(self, predicate, timeout: float = 30.0, interval: float = 0.05) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("condition not met in time")
            time.sleep(interval)


@pytest.fixture
def instance() -> Iterator[Instance]:
    root = tempfile.mkdtemp(prefix="memd-t-", dir="/tmp")
    inst = Instance(root)
    try:
        yield inst
    finally:
        if inst.process is not None:
            inst.process.kill()
            inst.process.wait()
        if is_locked(inst.paths.lock_file):  # a daemon `memctl daemon start` left behind by a failed test
            with contextlib.suppress(ProcessLookupError, TypeError, KeyError):
                os.kill(holder(inst.paths.lock_file)["pid"], signal.SIGKILL)  # type: ignore[arg-type]
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def daemon(instance: Instance) -> Iterator[Instance]:
    instance.start()
    yield instance
    if instance.process is not None:
        assert instance.stop() == 0


@pytest.fixture
def modeled() -> Iterator[Instance]:
    """A daemon with its embedding model: context is chosen as users get it (a second to load)."""
    instance = Instance(tempfile.mkdtemp(prefix="memd-m-", dir="/tmp"), embedding=True)
    try:
        instance.start()
        yield instance
        assert instance.stop() == 0
    finally:
        if instance.process is not None:
            instance.kill()
        shutil.rmtree(instance.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server, one for the whole run (initdb takes about a second), made on the
    first test that asks; killed and removed at the end, whatever the tests did to it."""
    server = PgServer()
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PgServer]:
    """A second real server, PostgreSQL with pgvector (``tests/pg.py``: ``pgvector_bindir``), for
    what needs vectors on the server; made on the first test that asks."""
    server = PgServer(pgvector_bindir())
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def pg(pg_server: PgServer) -> Iterator[PgDatabase]:
    """A fresh database on the shared server; it and the roles the test made are dropped after."""
    database = PgDatabase(pg_server)
    try:
        yield database
    finally:
        database.drop()


@pytest.fixture(scope="session")
def browser_session() -> Iterator[Browser]:
    """One headless Chromium for the whole run (tests/browser.py), started on the first test that
    asks; quit at the end, its processes and profile removed.  Tests take it through ``browser``."""
    started = Browser.start()
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def browser(browser_session: Browser) -> Browser:
    """The run's browser on a blank page: no dialog, storage or console line left from the test before."""
    browser_session.reset()
    return browser_session
