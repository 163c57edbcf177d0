"""Machines for the sync tests: each a daemon on its own data dir, syncing with a real
PostgreSQL server as one role (``tests/test_sync.py``, ``tests/test_team_search.py``)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import Instance

from memd.services.sync import MACHINE_FILE
from memd_client.rpc import DaemonUnavailable

PASSWORD = "s3cret-pw"


def repository(path: Path, remote: str) -> str:
    """A git checkout's layout at ``path`` whose origin is ``remote`` (no git process needed)."""
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(
        f'[remote "origin"]\n\turl = {remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    )
    return str(path)


class Machine:
    """One machine: a daemon on its own data dir, syncing as ``role``."""

    def __init__(
        self,
        root: str,
        name: str,
        url: str,
        teams: dict[str, str] | None = None,
        privacy: str = "",
        label: str | None = None,
        copy_of: Machine | None = None,
        interval: float = 0.1,
        embedding: bool = False,
        sync: str = "",
    ) -> None:
        self.instance = Instance(os.path.join(root, name), embedding=embedding)
        if copy_of is not None:  # a data dir copied whole, its machine id with it (a cloned VM)
            os.makedirs(self.instance.paths.data_dir, exist_ok=True)
            shutil.copy(os.path.join(copy_of.instance.paths.data_dir, MACHINE_FILE), self.instance.paths.data_dir)
        tables = "".join(f'"{key}" = "{team}"\n' for key, team in (teams or {}).items())
        self.instance.configure(
            (f"[privacy]\n{privacy}\n" if privacy else "")
            + f'[sync]\nurl = "{url}"\nmachine = "{label or name}"\ninterval = {interval}\n{sync}\n'
            + (f"[sync.teams]\n{tables}" if tables else "")
        )
        self.instance.start()

    def hook_prompt(self, cwd: str, text: str, session: str | None = None) -> None:
        self.instance.remember(text, cwd, session=session or f"s-{uuid.uuid4().hex[:8]}")

    def finds(self, cwd: str, word: str) -> bool:
        return any(word in hit.title or word in hit.snippet for hit in self.instance.search(word, cwd=cwd).results)

    def log(self) -> str:
        return self.instance.stderr()[-4000:]

    def stop(self) -> None:
        if self.instance.process is not None and self.instance.process.poll() is None:
            self.instance.stop()


def wait_until(predicate, what: str, machine: Machine, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except DaemonUnavailable:
            raise AssertionError(f"{what}: the daemon is gone:\n{machine.log()}") from None
        assert time.monotonic() < deadline, f"{what} not in time:\n{machine.log()}"
        time.sleep(0.1)


@contextmanager
def machines_of(prefix: str) -> Iterator[tuple[str, list[Machine]]]:
    """A short temp root for the machines a test starts (a socket path must stay short), and the
    list it adds them to: each is stopped, and the root removed, after."""
    root = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    machines: list[Machine] = []
    try:
        yield root, machines
    finally:
        for machine in machines:
            machine.stop()
        shutil.rmtree(root, ignore_errors=True)
