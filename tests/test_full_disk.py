"""A real full disk under the data dir (a small tmpfs, mounted by the test: it runs as root,
as CI does): hooks stay fast and spool, ``memctl status`` says plainly that commits fail,
why and what to do, and once there is room again the spool drains and status is clean."""

from __future__ import annotations

import errno
import json
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Instance

from memd_wire.paths import resolve


@pytest.fixture
def on_small_disk() -> Iterator[tuple[Instance, Path]]:
    inst = Instance(tempfile.mkdtemp(prefix="memd-full-", dir="/tmp"))
    disk = Path(inst.root, "disk")
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(disk)],
                             capture_output=True, text=True)  # fmt: skip
    assert mounted.returncode == 0, f"this test mounts a tmpfs and needs root: {mounted.stderr}"
    inst.env["XDG_DATA_HOME"] = str(disk)
    inst.paths = resolve(env=inst.env)
    inst.configure("[daemon]\nspool_drain_interval = 0.5\n")
    inst.start()
    try:
        yield inst, disk
    finally:
        if inst.process is not None:
            inst.stop()
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:  # unbuffered: a short last write leaves nothing for close to flush
        try:
            while True:
                f.write(b"\0" * (1 << 16))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def prompt(instance: Instance, n: int) -> float:
    payload = {"session_id": "s-full", "cwd": instance.root, "hook_event_name": "UserPromptSubmit",
               "prompt": f"full disk {n} " + "lorem ipsum " * 10_000, "transcript_path": "/dev/null"}  # fmt: skip
    started = time.monotonic()
    done = instance.hook("UserPromptSubmit", json.dumps(payload).encode())
    assert done.returncode == 0
    return time.monotonic() - started


def test_a_full_disk_is_named_by_status_and_nothing_is_lost(on_small_disk: tuple[Instance, Path]) -> None:
    inst, disk = on_small_disk
    prompt(inst, 0)
    assert inst.memctl("status").returncode == 0
    filler = fill(disk)
    took = [prompt(inst, n) for n in range(1, 21)]
    assert max(took) < 5.0, "hooks stay fast"
    assert inst.spooled(), "what could not be committed waits in the spool"
    status = inst.memctl("status")
    assert status.returncode == 1
    assert "COMMITS FAILING" in status.stdout and "disk full" in status.stdout and "free space" in status.stdout
    report = json.loads(inst.memctl("status", "--json").stdout)
    assert report["commits_failing"]["reason"] == "disk full"

    filler.unlink()
    inst.wait_for(lambda: not inst.spooled(), timeout=30)
    inst.wait_for(lambda: inst.memctl("status").returncode == 0, timeout=10)
    stored = inst.query("SELECT count(*) FROM events WHERE kind = 'prompt' AND text LIKE 'full disk %'")
    assert stored == [(21,)], "every prompt stored once"
    assert "COMMITS FAILING" not in inst.memctl("status").stdout
