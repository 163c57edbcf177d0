"""What the benchmarks share: an isolated daemon, realistic payloads, percentiles, tables."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from memd.metrics import percentile
from memd.protocol import Ping, Pong, Status, StatusReport
from memd_client.rpc import Client, DaemonUnavailable
from memd_wire.paths import Paths, resolve

__all__ = ["Instance", "isolated_daemon", "markdown_table", "parse_arguments", "payload_factory", "summary"]

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO.parent / "shared" / "fixtures" / "claude-code" / "hooks" / "hook_PostToolUse.json"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "


class Instance:
    """A running daemon whose every file lives under one temp directory."""

    def __init__(self, root: str, env: dict[str, str], paths: Paths, proc: subprocess.Popen[bytes]) -> None:
        self.root = root
        self.env = env
        self.paths = paths
        self.proc = proc

    def client(self) -> Client:
        return Client(self.paths.socket)

    def status(self) -> StatusReport:
        with self.client() as client:
            return client.call(Status(), StatusReport)

    def spooled(self) -> list[str]:
        """Frames the hook client had to write to the spool instead of handing over."""
        try:
            return sorted(n for n in os.listdir(self.paths.spool_dir) if n.endswith(".frame"))
        except FileNotFoundError:
            return []

    def log_tail(self, lines: int = 20) -> str:
        with open(os.path.join(self.root, "daemon.out"), encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])


@contextmanager
def isolated_daemon(python: str = sys.executable, *, seed: Callable[[Paths], None] | None = None) -> Iterator[Instance]:
    """Run ``python -m memd`` on fresh XDG directories; stop it and delete them afterwards.

    ``seed`` fills the directories before the daemon starts (e.g. copies a database in).
    """
    root = tempfile.mkdtemp(prefix="memd-bench-", dir="/tmp")
    proc: subprocess.Popen[bytes] | None = None
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMD_")}
        for var, name in (
            ("XDG_RUNTIME_DIR", "run"),
            ("XDG_DATA_HOME", "data"),
            ("XDG_STATE_HOME", "state"),
            ("XDG_CONFIG_HOME", "config"),
        ):
            env[var] = os.path.join(root, name)
            os.makedirs(env[var], mode=0o700)
        paths = resolve(env=env)
        # No periodic spool drain: a frame the hook client spooled stays there to be counted.
        # No retention pass: the corpora are dated months back, and it would delete their
        # low-importance events while they are measured.
        os.makedirs(os.path.dirname(paths.config_file))
        Path(paths.config_file).write_text("[daemon]\nspool_drain_interval = 86400.0\n\n[retention]\nenabled = false\n")
        if seed is not None:
            seed(paths)
        with open(os.path.join(root, "daemon.out"), "wb") as out:
            proc = subprocess.Popen([python, "-m", "memd"], env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        instance = Instance(root, env, paths, proc)
        _wait_ready(instance)
        yield instance
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(instance: Instance) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with instance.client() as client:
                client.call(Ping(), Pong)
            return
        except DaemonUnavailable:
            if instance.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"memd did not start:\n{instance.log_tail()}") from None
            time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def payload_factory(size: int = 2048) -> Callable[[str], bytes]:
    """Make PostToolUse payloads of exactly ``size`` bytes (one JSON line), unique per ``tool_use_id``.

    Starts from Claude Code's real payload and pads ``tool_response.stdout``.
    """
    template = json.loads(FIXTURE.read_text())

    def encode(tool_use_id: str, stdout: str) -> bytes:
        response = {**template["tool_response"], "stdout": stdout}
        data = {**template, "tool_use_id": tool_use_id, "tool_response": response}
        return (json.dumps(data, separators=(",", ":")) + "\n").encode()

    def make(tool_use_id: str) -> bytes:
        pad = size - len(encode(tool_use_id, ""))
        if pad < 0:
            raise ValueError(f"a payload cannot be smaller than {size - pad} bytes")
        return encode(tool_use_id, (FILLER * (pad // len(FILLER) + 1))[:pad])

    return make


def summary(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 (nearest rank, as the daemon computes them) and the mean, in ms."""
    values = sorted(samples_ms)
    return {
        "p50": percentile(values, 0.50),
        "p95": percentile(values, 0.95),
        "p99": percentile(values, 0.99),
        "mean": sum(values) / len(values) if values else 0.0,
    }


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def parse_arguments(doc: str, parts: str) -> tuple[argparse.Namespace, set[str], list[int]]:
    """The options of the benchmarks that run parts over corpus sizes: (args, parts, sizes)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=parts)
    parser.add_argument("--sizes", default="10000,100000", help="corpus sizes for the latency part")
    parser.add_argument("--runs", type=int, default=100, help="timed runs of each measurement (default 100)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs of each first (default 5)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    return args, set(args.parts.split(",")), [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
