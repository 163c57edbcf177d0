"""A real PostgreSQL server for tests: its own cluster in a temp dir, started, killed and restarted by them.

The sync (issue 20) talks to a PostgreSQL server, so its tests get one, never a mock: ``initdb``
in a private ``/tmp/memd-pg-*`` dir (short: the server's Unix socket lives there, and socket
paths are limited to ~104 bytes), then ``postgres`` on 127.0.0.1 on a free port.

Who logs in how (``pg_hba.conf``):

- the superuser ``postgres``, over the Unix socket only, without a password (``trust``): the
  tests' own set-up (``sql``, ``admin``, ``create_role``, ``create_database``);
- every role over TCP on 127.0.0.1 with its password (``scram-sha-256``): the roles a test makes
  log in as real users would, through ``dsn``.  The superuser has no password, so it cannot.

As root (as tests run here and in CI), the server's programs run as the ``postgres`` system
user, which owns the dir: ``initdb`` and ``postgres`` refuse to run as root.

The test process starts ``postgres`` itself rather than through ``pg_ctl``, and so is its
parent.  ``pg_ctl`` leaves the server to init; a killed server is then a zombie until init reaps
it (seconds, where init reaps at all), and a new server reads the zombie's pid in
``postmaster.pid`` as a live server and refuses to start.  The parent reaps it at once.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import sql
from psycopg.abc import Params

SUPERUSER = "postgres"
HOST = "127.0.0.1"
SYSTEM_USER = "postgres"  # who runs the server when the tests run as root (Debian's package creates it)
INSTALL = (
    "install Debian's `postgresql` package (`apt-get install --no-install-recommends postgresql`;"
    " `python tests/setup_machine.py` does)"
)

# Fast for a throwaway cluster, and still as safe as a real one against what the tests do to it.
# fsync=off: writes reach the kernel's page cache and are not forced to disk.  A killed server
# loses nothing by it (the kernel still holds and writes every page it was given); only an OS crash
# or a power cut would, and no test makes one.  synchronous_commit stays on: off, a commit returns
# before its WAL leaves the server's shared memory, so a SIGKILL could lose a committed row.
# full_page_writes stays on too: a write cut short by SIGKILL can tear a page, and recovery mends
# it from the page's full image in the WAL.
SETTINGS = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{sockets}'
password_encryption = 'scram-sha-256'
fsync = off
shared_buffers = 16MB
autovacuum = off
"""

HBA = f"""# TYPE  DATABASE  USER          ADDRESS       METHOD
local   all       {SUPERUSER}                    trust
host    all       all           {HOST}/32  scram-sha-256
"""


class PgServerError(AssertionError):
    """The test server is missing, or did not start or stop: a test failure, never a skip."""


def find_bindir() -> Path:
    """Where the server's programs are: ``pg_config --bindir``, the newest ``/usr/lib/postgresql/*/bin``
    (Debian keeps them off PATH), or ``initdb``'s dir on PATH; the first that has ``initdb`` and
    ``postgres``.  ``pg_config`` comes with the client's headers too, so its dir may hold no server."""
    candidates = []
    if pg_config := shutil.which("pg_config"):
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if found.returncode == 0:
            candidates.append(Path(found.stdout.strip()))
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version, reverse=True)
    if initdb := shutil.which("initdb"):
        candidates.append(Path(initdb).resolve().parent)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "postgres").is_file():
            return bindir
    where = (
        f"in {', '.join(map(str, candidates))}"
        if candidates
        else "(no pg_config, no /usr/lib/postgresql/*/bin, no initdb on PATH)"
    )
    raise PgServerError(f"no PostgreSQL server: no initdb and postgres {where}; {INSTALL}")


def pgvector_bindir() -> Path:
    """The programs of the PostgreSQL with pgvector that the ``pgserver`` wheel carries (a test
    requirement: Debian 12 packages no pgvector).  Found through the wheel's file list,
    without importing its package (which would make directories as it loads)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        bindir = Path(str(distribution("pgserver").locate_file("pgserver/pginstall/bin")))
    except PackageNotFoundError:
        raise PgServerError("no pgvector server: pip install '.[test]' (it has pgserver)") from None
    if not (bindir / "postgres").is_file():
        raise PgServerError(f"pgserver has no postgres in {bindir}")
    return bindir


def _version(bindir: Path) -> tuple[int, ...]:
    """``/usr/lib/postgresql/15/bin`` → (15,); a name that is no version sorts first."""
    try:
        return tuple(int(part) for part in bindir.parent.name.split("."))
    except ValueError:
        return ()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class PgServer:
    """One PostgreSQL cluster of its own, made by ``initdb`` at construction and not yet running.

    ``start()`` runs it, ``stop()`` shuts it down, ``kill()`` crashes it, ``start()`` again
    runs it on the same data and port (after a kill: crash recovery first), ``close()`` removes
    it all.  ``sql``/``admin`` are the superuser's, ``dsn`` is what the code under test gets.
    """

    def __init__(self, bindir: Path | None = None) -> None:
        self.bindir = bindir or find_bindir()
        # root: the server runs as the system user (setpriv execs, so the pid we hold is the server's).
        self.run_as: list[str] = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam(SYSTEM_USER)
            except KeyError:
                raise PgServerError(
                    f"PostgreSQL refuses to run as root and there is no `{SYSTEM_USER}` user: {INSTALL}"
                ) from None
            self.run_as = ["setpriv", f"--reuid={SYSTEM_USER}", f"--regid={SYSTEM_USER}", "--init-groups", "--"]
        self.root = Path(tempfile.mkdtemp(prefix="memd-pg-", dir="/tmp"))
        self.data = self.root / "data"
        self.log_file = self.root / "server.log"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        try:
            if self.run_as:
                shutil.chown(self.root, SYSTEM_USER, SYSTEM_USER)
            self._initdb()
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def _initdb(self) -> None:
        # --no-sync: a throwaway cluster need not wait for the disk.  initdb's own pg_hba.conf is
        # replaced below; its auth flags only spare us its warning about trust.
        argv = [str(self.bindir / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "-E", "UTF8", "--no-locale",
                "--auth-local=trust", "--auth-host=reject", "--no-sync"]  # fmt: skip
        done = subprocess.run([*self.run_as, *argv], cwd=self.root, capture_output=True, text=True)
        if done.returncode != 0:
            raise PgServerError(f"initdb failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(SETTINGS.format(port=self.port, sockets=self.root))
        (self.data / "pg_hba.conf").write_text(HBA)

    # --- the server's life ----------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.process is not None

    def start(self, timeout: float = 30.0) -> None:
        """Start the server and return when it accepts connections (after a kill, once it has
        recovered); fails with the server's log if it exits or is not ready within ``timeout``."""
        assert self.process is None, "already running"
        # Its own session: a Ctrl-C meant for pytest does not reach the server; close() stops it.
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                [*self.run_as, str(self.bindir / "postgres"), "-D", str(self.data)],
                cwd=self.root, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            status = self.process.poll()
            if status is not None:
                self.process = None
                raise PgServerError(f"postgres exited with status {status} at start:\n{self.log()}")
            try:
                with self.admin(connect_timeout=2):
                    return
            except psycopg.OperationalError as e:  # not up yet, or still recovering
                if time.monotonic() > deadline:
                    self.kill()
                    raise PgServerError(f"postgres not ready in {timeout} s ({e}):\n{self.log()}") from e
                time.sleep(0.02)

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT): open transactions roll back, clients are cut off, a checkpoint
        is written.  A server that does not stop within ``timeout`` is killed, and that fails."""
        assert self.process is not None, "not running"
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise PgServerError(f"postgres did not stop in {timeout} s (killed):\n{self.log()}") from None
        self.process = None

    def kill(self) -> None:
        """Crash the server: SIGKILL to the postmaster and every process it runs, all at once, as
        the OOM killer or ``kill -9`` would.  Nothing gets to flush, roll back or checkpoint: an open
        transaction is lost, a committed one is in the WAL, and ``start()`` recovers from it.

        The postmaster is stopped first (SIGSTOP), so that it forks no process we would miss;
        the others die with it rather than on their own, so ``start()`` finds none still attached
        to the old shared memory (the server would refuse to start beside them)."""
        assert self.process is not None, "not running"
        postmaster = self.process.pid
        os.kill(postmaster, signal.SIGSTOP)
        children = _children(postmaster)
        self.process.kill()
        self.process.wait()
        self.process = None
        for pid in children:
            with contextlib.suppress(ProcessLookupError):  # gone already: fine
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not all(_gone(pid) for pid in children):
            if time.monotonic() > deadline:
                raise PgServerError(f"server processes {children} still alive 10 s after SIGKILL")
            time.sleep(0.01)

    def close(self) -> None:
        """Kill the server if it runs (its data is about to go: nothing to shut down cleanly for)
        and remove its dir."""
        try:
            if self.process is not None:
                self.kill()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def log(self) -> str:
        """The server's log so far: what it said about starting, recovering, refusing a login."""
        try:
            return self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return "(no server log)"

    # --- connecting -------------------------------------------------------------------------

    def dsn(self, user: str, password: str, dbname: str = "postgres") -> str:
        """A libpq URL for ``user`` over TCP, as the code under test would be configured."""
        user, password, dbname = (quote(part, safe="") for part in (user, password, dbname))
        return f"postgresql://{user}:{password}@{HOST}:{self.port}/{dbname}"

    def admin(self, dbname: str = "postgres", **options: Any) -> psycopg.Connection[tuple[Any, ...]]:
        """A superuser connection over the Unix socket, in autocommit; close it (``with``)."""
        return psycopg.connect(
            host=str(self.root), port=self.port, user=SUPERUSER, dbname=dbname, autocommit=True, **options
        )

    def sql(
        self, query: str | sql.SQL | sql.Composed, params: Params | None = None, *, dbname: str = "postgres"
    ) -> list[tuple[Any, ...]]:
        """Run ``query`` as the superuser (autocommit) in ``dbname``; its rows, if it returns any.
        Without ``params``, ``query`` may hold several statements separated by ``;``."""
        with self.admin(dbname) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []

    def create_role(self, name: str, password: str) -> None:
        """A role that can log in (over TCP, with ``password``); no other privileges."""
        self.sql(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name), sql.Literal(password)))

    def create_database(self, name: str, owner: str | None = None) -> None:
        query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if owner is not None:
            query += sql.SQL(" OWNER {}").format(sql.Identifier(owner))
        self.sql(query)


class PgDatabase:
    """A fresh database of its own on a shared server, for one test: ``drop()`` removes it and the
    roles made through ``create_role`` (roles belong to the whole server, so a test's ``alice``
    would otherwise meet the next test's).  ``server`` is there to ``kill()`` and ``start()``."""

    _made = itertools.count(1)

    def __init__(self, server: PgServer) -> None:
        self.server = server
        self.name = f"test_{next(self._made)}"
        self.roles: list[str] = []
        server.create_database(self.name)

    def dsn(self, user: str, password: str) -> str:
        return self.server.dsn(user, password, self.name)

    def admin(self, **options: Any) -> psycopg.Connection[tuple[Any, ...]]:
        return self.server.admin(self.name, **options)

    def sql(self, query: str | sql.SQL | sql.Composed, params: Params | None = None) -> list[tuple[Any, ...]]:
        return self.server.sql(query, params, dbname=self.name)

    def create_role(self, name: str, password: str) -> None:
        self.server.create_role(name, password)
        self.roles.append(name)

    def drop(self) -> None:
        """Drop the database (cutting off whoever is still connected), then the roles: what they
        owned went with it.  A server the test left killed is started again for the next test."""
        if not self.server.running:
            self.server.start()
        self.server.sql(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(self.name)))
        for role in self.roles:
            self.server.sql(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux: read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _stat(int(entry))[1:2] == [str(pid)]:
            found.append(int(entry))
    return found


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited: no such process, or a zombie (it has let go of everything)."""
    stat = _stat(pid)
    return not stat or stat[0] == "Z"


def _stat(pid: int) -> list[str]:
    """``/proc/PID/stat`` past the command's name: state, parent, ...; empty for no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):
        return []
