"""Issue 7's new pieces: MCP server startup, MCP tool-call latency, the plugin launcher's overhead.

An isolated daemon (``harness.isolated_daemon``, embedding model on) serves the first two
parts; ``memctl launcher --record`` first writes the plugin launcher's record in its state
directory (and in the launcher part's daemon's).  Parts (``--parts``, default all):

``startup``   wall time from spawning the MCP server to reading its answer to the
              ``initialize`` line Claude Code 2.1.270 sent (recorded in
              ``../shared/fixtures/claude-code/mcp/initialize_request_from_claude_code.json``):
              ``python -I -S memd_client/mcp/serve.py`` as ``memctl mcp install`` registers it
              (its answers come from the listing the whole server wrote, ``mcp/early.py``), and
              ``sh hooks/memd-launch mcp`` as the plugin's ``.mcp.json`` starts it.
              Interleaved run by run (order rotated) with the floors ``python -I -S -c
              pass`` and ``python -c "import msgspec"``, spawn to exit, on the same
              interpreter; and, for reference, with ``/tmp/mcpv1/bin/python -c 'from
              mcp.server.fastmcp import FastMCP'`` (the official ``mcp`` package in a
              throwaway virtualenv, the import memd's server was written to avoid), or a
              line saying that row was skipped when /tmp/mcpv1 is not there.  Initialize
              needs no daemon: the server connects on its first tool call.
``calls``     the daemon is seeded through real ``Ingest`` requests: the first
              ``--events`` events of ``bench/corpus.py``'s synthetic sessions (five
              projects) and the golden memories of ``../shared/fixtures/golden/`` as
              prompts of the corpus's first project, then its outbox is drained (every
              event embedded).  One long-lived server (``python -m memd_client.mcp``,
              ``CLAUDE_PROJECT_DIR`` = that project) is initialized as Claude Code does,
              then, round by round, each of ``ping`` and ``tools/list`` (answered by the
              server alone: the stdio round trip's floor), ``mem_search`` (the golden
              queries in turn), ``mem_timeline`` (each query's best hit), ``mem_details``
              (each query's top three hits) and ``mem_stats`` is timed from writing the
              request line to reading the answer line, interleaved (order alternated) with
              the same request sent directly over one ``memd_client.rpc.Client`` connection
              (``Ping``, the socket's floor; ``Search``, ``Timeline`` and ``Details`` built
              as the tools build them; ``Status`` then ``Stats``), so the proxy's overhead
              is the difference.  The proxy's own CPU per call (decode, validate, render,
              encode) is timed in this process too, on a ``Server`` whose daemon hands back
              the direct call's reply: the rest of the difference is the extra process hop.
``launcher``  on a second isolated daemon, with ``[embedding] enabled = false``: embedding
              each event as it lands takes most of a core at this pace, which on two vCPUs
              only buries a difference of about a millisecond in noise (``hook_latency.py``
              measures the hook under it).  Wall time of the PostToolUse hook as the plugin
              runs it (``sh -c`` of the command in ``hooks/hooks.json``,
              ``CLAUDE_PLUGIN_ROOT`` = this checkout), fed a ~2 KB PostToolUse payload,
              interleaved (order rotated) with the direct hook command (``memctl
              hook-command PostToolUse``, no shell, as ``bench/hook_latency.py`` runs it),
              the same command under ``sh -c`` (what a hook ``memctl install`` put in
              settings.json costs, since Claude Code runs hook commands through a shell)
              and ``python -I -S -c pass``.  Checks that every event was stored and none
              spooled.

Overheads (MCP over direct, a hook command over the direct one) are also given as the median
of the round-by-round differences ("paired"), which the machine's drift disturbs less than a
difference of two medians does.  The child processes run in the daemon's temp directory (a
``-c`` script puts its working directory first on ``sys.path``: in ``bench/`` this file would
shadow the ``mcp`` package).

    .venv/bin/python bench/mcp.py [--parts startup,calls,launcher] [--startup-runs 50]
                                  [--calls 200] [--hook-runs 300] [--events 400] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from corpus import PROJECTS, Corpus
from harness import REPO, Instance, isolated_daemon, markdown_table, payload_factory, summary

from memd.protocol import (
    Details,
    DetailsResult,
    Ingest,
    Ingested,
    Ping,
    Pong,
    Reply,
    Request,
    Search,
    SearchResults,
    Stats,
    StatsReport,
    Status,
    StatusReport,
    Timeline,
    TimelineResult,
)
from memd_client.install import MCP_SCRIPT
from memd_client.mcp.protocol import Server
from memd_client.mcp.tools import INSTRUCTIONS, Context, tools
from memd_client.memctl.claude import hook_command
from memd_wire.launcher import signal_guard
from memd_wire.paths import Paths

SHARED = REPO.parent / "shared" / "fixtures"
INITIALIZE = (SHARED / "claude-code" / "mcp" / "initialize_request_from_claude_code.json").read_bytes().strip() + b"\n"
GOLDEN = SHARED / "golden"
LAUNCHER = REPO / "hooks" / "memd-launch"
FASTMCP_PYTHON = "/tmp/mcpv1/bin/python"
PROJECT = PROJECTS[0][0]
SESSION = "s-bench-mcp"
DRAIN_TIMEOUT = 300.0

FLOOR = "`python -I -S -c pass`"
MSGSPEC = '`python -c "import msgspec"`'
SERVER = "`python -I -S memd_client/mcp/serve.py` (memctl mcp install)"
PLUGIN_SERVER = "`sh hooks/memd-launch mcp` (plugin .mcp.json)"
FASTMCP = "`from mcp.server.fastmcp import FastMCP` (/tmp/mcpv1, mcp {version})"
PING = "ping (MCP: the server answers it; direct: the daemon's Ping)"
HOOK = "hook, direct (`memctl hook-command`)"
HOOK_SHELL = "hook, `sh -c` (settings.json install)"
HOOK_PLUGIN = "hook, plugin (`sh -c 'sh memd-launch hook …'`)"


@dataclasses.dataclass
class Result:
    load_average: float
    parts: list[str]
    startup_runs: int = 0
    startup_commands: dict[str, str] = dataclasses.field(default_factory=dict)
    startup_ms: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    startup_skipped: str = ""
    seeded_events: int = 0
    calls: int = 0
    call_ms: dict[str, dict[str, dict[str, float]]] = dataclasses.field(default_factory=dict)
    """call -> {"mcp", "direct", "proxy_cpu", "overhead"} -> summary; overhead: MCP - direct, paired by round."""
    call_errors: list[str] = dataclasses.field(default_factory=list)
    daemon_ms: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    hook_runs: int = 0
    payload_bytes: int = 0
    hook_commands: dict[str, str] = dataclasses.field(default_factory=dict)
    hook_ms: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    hook_over_direct_ms: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    """Each command - the direct hook command, paired by round."""
    launcher_own_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    """The plugin's command - the direct command under ``sh -c``, paired by round."""
    events_sent: int = 0
    events_stored: int = 0
    rejected: int = 0
    spooled: int = 0

    @property
    def ok(self) -> bool:
        stored = self.events_stored == self.events_sent and self.rejected == 0 and self.spooled == 0
        return stored and not self.call_errors


def interleaved(series: dict[str, Callable[[int], float]], runs: int, warmup: int) -> dict[str, list[float]]:
    """Run every series once per round, the order rotated each round; ms per timed round."""
    samples: dict[str, list[float]] = {name: [] for name in series}
    names = list(series)
    for i in range(-warmup, runs):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            ms = series[name](i + warmup)
            if i >= 0:
                samples[name].append(ms)
    return samples


def paired(a: list[float], b: list[float]) -> dict[str, float]:
    """The summary of ``a - b`` round by round (both sampled in the same rounds)."""
    return summary([x - y for x, y in zip(a, b, strict=True)])


def to_exit(argv: list[str], env: dict[str, str], cwd: str, stdin: bytes = b"") -> float:
    """Milliseconds from spawn to exit."""
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


class McpProcess:
    """An MCP server subprocess: ``send`` a line, ``read`` the answer's."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, stderr: str | None = None) -> None:
        self.argv, self.stderr = argv, stderr
        with open(stderr or os.devnull, "ab") as err:  # the child keeps its own copy
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env, cwd=cwd
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: BinaryIO = self.proc.stdin
        self.stdout: BinaryIO = self.proc.stdout

    def send(self, line: bytes) -> None:
        self.stdin.write(line)
        self.stdin.flush()

    def exchange(self, line: bytes) -> tuple[float, bytes]:
        """Milliseconds from writing ``line`` to reading the answer, and the answer."""
        started = time.perf_counter()
        self.send(line)
        answer = self.stdout.readline()
        ms = (time.perf_counter() - started) * 1000
        if not answer.endswith(b"\n"):
            why = Path(self.stderr).read_text(errors="replace")[-2000:] if self.stderr else ""
            raise RuntimeError(f"the MCP server ({shlex.join(self.argv)}) gave no answer:\n{why}")
        return ms, answer

    def close(self) -> None:
        """End it as Claude Code does: stdin closed; killed if it does not exit."""
        self.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()

    def __enter__(self) -> McpProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self.stdin.closed:
            self.close()


def to_initialized(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """Milliseconds from spawning an MCP server to reading its answer to Claude Code's initialize."""
    started = time.perf_counter()
    with McpProcess(argv, env, cwd) as server:
        server.send(INITIALIZE)
        answer = server.stdout.readline()
        ms = (time.perf_counter() - started) * 1000
    reply = json.loads(answer or b"null")
    if not isinstance(reply, dict) or reply.get("id") != 0 or "result" not in reply:
        raise RuntimeError(f"{shlex.join(argv)} did not answer initialize: {answer[:200]!r}")
    return ms


def record_launcher(instance: Instance) -> None:
    """``memctl launcher --record`` in the instance's environment; check it names this interpreter
    (maybe by another name: memctl's shebang says ``python3``)."""
    memctl = Path(sys.executable).parent / "memctl"
    done = subprocess.run([str(memctl), "launcher", "--record"], env=instance.env, capture_output=True, check=False)
    record = Path(instance.env["XDG_STATE_HOME"]) / "memd" / "installation"
    if done.returncode or not record.is_file():
        raise RuntimeError(f"memctl launcher --record failed: {done.stderr.decode(errors='replace')}")
    python = dict(line.split("=", 1) for line in record.read_text().splitlines())["python"]
    if os.path.realpath(python) != os.path.realpath(sys.executable):
        raise RuntimeError(f"the launcher record names {python}, not {os.path.abspath(sys.executable)}")


def measure_startup(instance: Instance, result: Result, runs: int, warmup: int) -> None:
    python = os.path.abspath(sys.executable)
    env, cwd = instance.env, instance.root
    commands: dict[str, list[str]] = {
        FLOOR: [python, "-I", "-S", "-c", "pass"],
        MSGSPEC: [python, "-c", "import msgspec"],
        SERVER: [python, "-I", "-S", MCP_SCRIPT],
        PLUGIN_SERVER: ["sh", str(LAUNCHER), "mcp"],
    }
    series: dict[str, Callable[[int], float]] = {
        FLOOR: lambda _: to_exit(commands[FLOOR], env, cwd),
        MSGSPEC: lambda _: to_exit(commands[MSGSPEC], env, cwd),
        SERVER: lambda _: to_initialized(commands[SERVER], env, cwd),
        PLUGIN_SERVER: lambda _: to_initialized(commands[PLUGIN_SERVER], env, cwd),
    }
    if os.access(FASTMCP_PYTHON, os.X_OK):
        probe = [FASTMCP_PYTHON, "-c", "import importlib.metadata as m; print(m.version('mcp'))"]
        version = subprocess.run(probe, capture_output=True, text=True, cwd=cwd, check=False).stdout.strip()
        if version:
            name = FASTMCP.format(version=version)
            commands[name] = [FASTMCP_PYTHON, "-c", "from mcp.server.fastmcp import FastMCP"]
            series[name] = lambda _: to_exit(commands[name], env, cwd)
        else:
            result.startup_skipped = f"{FASTMCP_PYTHON} has no `mcp` package"
    else:
        result.startup_skipped = f"{FASTMCP_PYTHON} does not exist"
    samples = interleaved(series, runs, warmup)
    result.startup_runs = runs
    result.startup_commands = {name: shlex.join(argv) for name, argv in commands.items()}
    result.startup_ms = {name: summary(values) for name, values in samples.items()}


def seed(instance: Instance, events: int) -> int:
    """Corpus events and golden memories through real Ingest requests; then every one embedded."""
    count = 0
    with instance.client() as client:
        for item in Corpus(1).stream(events):
            client.call(Ingest(event=item.hook, sent_at_ns=item.sent_at_ns, payload=item.payload), Ingested)
            count += 1
        session = str(uuid.uuid4())
        for path in sorted(GOLDEN.glob("*.json")):
            for memory in json.loads(path.read_text())["memories"]:
                payload = {
                    "session_id": session,
                    "cwd": PROJECT,
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": memory["content"],
                    "transcript_path": "/dev/null",
                }
                body = json.dumps(payload).encode()
                client.call(Ingest(event="UserPromptSubmit", sent_at_ns=time.time_ns(), payload=body), Ingested)
                count += 1
    deadline = time.monotonic() + DRAIN_TIMEOUT
    while (embedding := instance.status().embedding) is None or embedding.state != "ready" or embedding.backlog:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the outbox did not drain: {embedding}")
        time.sleep(0.2)
    return count


def measure_calls(instance: Instance, result: Result, calls: int, warmup: int, events: int) -> None:
    result.seeded_events = seed(instance, events)
    queries = [q["query"] for path in sorted(GOLDEN.glob("*.json")) for q in json.loads(path.read_text())["queries"]]
    targets: list[tuple[str, str, list[str]]] = []  # (query, timeline id, details ids)
    with instance.client() as client:
        for query in queries:
            hits = client.call(Search(query=query, cwd=PROJECT), SearchResults).results
            if hits:
                targets.append((query, f"mem:{hits[0].cite}", [f"mem:{h.cite}" for h in hits[:3]]))
    if not targets:
        raise RuntimeError("no golden query found anything in the seeded daemon")

    replies: dict[type[Request], Reply] = {}
    answer = Context(lambda request, _: replies[type(request)], PROJECT, SESSION)
    local = Server("memd", "bench", tools(answer), INSTRUCTIONS)  # the proxy with a daemon that costs nothing
    env = {**instance.env, "CLAUDE_PROJECT_DIR": PROJECT, "CLAUDE_CODE_SESSION_ID": SESSION}
    ids = iter(range(1, 1 << 30))
    samples: dict[str, dict[str, list[float]]] = {}

    def line(method: str, params: dict[str, Any] | None = None) -> bytes:
        message = {"jsonrpc": "2.0", "id": next(ids), "method": method, **({"params": params} if params else {})}
        return json.dumps(message).encode() + b"\n"

    stderr = os.path.join(instance.root, "mcp.stderr")
    with (
        McpProcess([sys.executable, "-m", "memd_client.mcp"], env, instance.root, stderr) as server,
        instance.client() as direct,
    ):
        server.exchange(INITIALIZE)
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

        def over_mcp(name: str, message: bytes, timed: bool) -> None:
            ms, answer = server.exchange(message)
            reply = json.loads(answer)
            error = reply.get("error") or (reply["result"].get("isError") and reply["result"]["content"][0]["text"])
            if error:
                result.call_errors.append(f"{name}: {str(error)[:200]}")
            if timed:
                samples.setdefault(name, {}).setdefault("mcp", []).append(ms)

        def over_socket(name: str, requests: list[tuple[Request, type[Reply]]], timed: bool) -> None:
            started = time.perf_counter()
            for request, expect in requests:
                replies[type(request)] = direct.call(request, expect)
            ms = (time.perf_counter() - started) * 1000
            if timed:
                samples.setdefault(name, {}).setdefault("direct", []).append(ms)

        def in_process(name: str, message: bytes, timed: bool) -> None:
            started = time.perf_counter()
            local.receive(message)
            ms = (time.perf_counter() - started) * 1000
            if timed:
                samples.setdefault(name, {}).setdefault("proxy_cpu", []).append(ms)

        for i in range(-warmup, calls):
            query, timeline_id, details_ids = targets[(i + warmup) % len(targets)]
            rounds: list[tuple[str, bytes, list[tuple[Request, type[Reply]]]]] = [
                (PING, line("ping"), [(Ping(), Pong)]),
                ("tools/list", line("tools/list"), []),
                (
                    "mem_search",
                    line("tools/call", {"name": "mem_search", "arguments": {"query": query}}),
                    [(Search(query=query, cwd=PROJECT), SearchResults)],
                ),
                (
                    "mem_timeline",
                    line("tools/call", {"name": "mem_timeline", "arguments": {"id": timeline_id}}),
                    [(Timeline(id=timeline_id, caller=SESSION), TimelineResult)],
                ),
                (
                    "mem_details",
                    line("tools/call", {"name": "mem_details", "arguments": {"ids": details_ids}}),
                    [(Details(ids=details_ids, caller=SESSION), DetailsResult)],
                ),
                (
                    "mem_stats",
                    line("tools/call", {"name": "mem_stats", "arguments": {}}),
                    [(Status(), StatusReport), (Stats(), StatsReport)],
                ),
            ]
            for name, message, requests in rounds:
                timed = i >= 0
                if not requests:  # answered by the server alone
                    over_mcp(name, message, timed)
                    in_process(name, message, timed)
                    continue
                if i % 2:
                    over_mcp(name, message, timed)
                    over_socket(name, requests, timed)
                else:
                    over_socket(name, requests, timed)
                    over_mcp(name, message, timed)
                in_process(name, message, timed)
    result.calls = calls
    for series in samples.values():
        if "direct" in series:
            series["overhead"] = [x - y for x, y in zip(series["mcp"], series["direct"], strict=True)]
    result.call_ms = {name: {how: summary(v) for how, v in series.items()} for name, series in samples.items()}
    latency = instance.status().latency_ms
    result.daemon_ms = {
        op: {"count": s.count, "p50": s.p50, "p95": s.p95, "p99": s.p99}
        for op in ("ping", "search", "timeline", "details", "status", "stats")
        if (s := latency.get(op))
    }


def without_embedding(paths: Paths) -> None:
    with open(paths.config_file, "a", encoding="utf-8") as config:
        config.write("\n[embedding]\nenabled = false\n")


def measure_launcher(instance: Instance, result: Result, runs: int, warmup: int, size: int) -> None:
    hooks = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    plugin = hooks["PostToolUse"][0]["hooks"][0]["command"]
    direct = shlex.split(hook_command("PostToolUse"))
    commands = {
        FLOOR: [direct[len(signal_guard())], "-I", "-S", "-c", "pass"],  # the interpreter, past the guard
        HOOK: direct,
        HOOK_SHELL: ["sh", "-c", shlex.join(direct)],
        HOOK_PLUGIN: ["sh", "-c", plugin],
    }
    env = {**instance.env, "CLAUDE_PLUGIN_ROOT": str(REPO)}
    make = payload_factory(size)
    token = uuid.uuid4().hex[:12]
    before = instance.status()

    def run(k: int, argv: list[str]) -> Callable[[int], float]:
        return lambda n: to_exit(argv, env, instance.root, make(f"toolu_bench_{token}_{k}_{n:06d}"))

    samples = interleaved({name: run(k, argv) for k, (name, argv) in enumerate(commands.items())}, runs, warmup)
    after = instance.status()
    result.hook_runs = runs
    result.payload_bytes = len(make("toolu_bench_x"))
    result.hook_commands = {name: shlex.join(argv) for name, argv in commands.items()}
    result.hook_ms = {name: summary(values) for name, values in samples.items()}
    result.hook_over_direct_ms = {name: paired(values, samples[HOOK]) for name, values in samples.items()}
    result.launcher_own_ms = paired(samples[HOOK_PLUGIN], samples[HOOK_SHELL])
    result.events_sent = 3 * (runs + warmup)
    result.events_stored = after.events - before.events
    result.rejected = after.rejected - before.rejected
    result.spooled = len(instance.spooled())


def ratio(a: dict[str, float], b: dict[str, float], key: str = "p50") -> float:
    return a[key] / b[key] if b.get(key) else 0.0


def report(r: Result) -> str:
    out = [f"memd MCP and plugin benchmarks; 1-minute load average at the start {r.load_average:.2f}"]
    if r.startup_ms:
        floor, msgspec_ = r.startup_ms[FLOOR], r.startup_ms[MSGSPEC]
        rows = [
            [name, s["p50"], s["p95"], s["p99"], s["mean"], f"{ratio(s, floor):.2f}", f"{ratio(s, msgspec_):.2f}"]
            for name, s in r.startup_ms.items()
        ]
        headers = ["ms, spawn to initialize answer (floors: to exit)", "p50", "p95", "p99", "mean", "/ floor p50"]
        out += [
            "",
            f"MCP server startup: {r.startup_runs} interleaved runs of each",
            "",
            markdown_table([*headers, "/ msgspec p50"], rows),
        ]
        if r.startup_skipped:
            out.append(f"\nskipped the FastMCP row: {r.startup_skipped}")
    if r.call_ms:
        rows = []
        for name, s in r.call_ms.items():
            mcp, direct, over, cpu = s["mcp"], s.get("direct"), s.get("overhead"), s["proxy_cpu"]
            rows.append(
                [
                    name,
                    mcp["p50"],
                    mcp["p95"],
                    direct["p50"] if direct else "",
                    direct["p95"] if direct else "",
                    f"{ratio(mcp, direct):.2f}" if direct else "",
                    over["p50"] if over else "",
                    over["p95"] if over else "",
                    cpu["p50"],
                ]
            )
        headers = ["ms", "MCP p50", "MCP p95", "direct p50", "direct p95", "MCP / direct p50"]
        headers += ["MCP - direct p50 (paired)", "p95 (paired)"]
        daemon = [[op, f"{s['count']:.0f}", s["p50"], s["p95"], s["p99"]] for op, s in r.daemon_ms.items()]
        out += [
            "",
            f"MCP tool calls: {r.calls} interleaved rounds over one server, {r.seeded_events} events seeded",
            "",
            markdown_table([*headers, "proxy CPU p50"], rows),
            "",
            "daemon-side (Status.latency_ms; MCP and direct calls together):",
            "",
            markdown_table(["op", "n", "p50", "p95", "p99"], daemon),
        ]
        if r.call_errors:
            out.append(f"\n{len(r.call_errors)} MCP calls FAILED, the first: {r.call_errors[0]}")
    if r.hook_ms:
        floor, over = r.hook_ms[FLOOR], r.hook_over_direct_ms
        rows = [
            [name, s["p50"], s["p95"], s["p99"], s["mean"], f"{ratio(s, floor):.2f}", over[name]["p50"]]
            for name, s in r.hook_ms.items()
        ]
        own = r.launcher_own_ms
        stored = r.events_stored == r.events_sent and not r.rejected and not r.spooled
        out += [
            "",
            f"plugin launcher: {r.hook_runs} interleaved runs of each, {r.payload_bytes}-byte PostToolUse payload",
            f"plugin: `{r.hook_commands[HOOK_PLUGIN]}`",
            "",
            markdown_table(["ms", "p50", "p95", "p99", "mean", "/ floor p50", "- direct p50 (paired)"], rows),
            "",
            f"the launcher's own cost (plugin - `sh -c` direct, paired) p50 {own['p50']:.2f} ms, p95 {own['p95']:.2f};"
            f" events sent {r.events_sent},"
            f" stored {r.events_stored}, rejected {r.rejected}, spooled {r.spooled}:"
            f" {'all stored' if stored else 'MISMATCH'}",
        ]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="startup,calls,launcher")
    parser.add_argument("--startup-runs", type=int, default=50, help="timed spawns of each command (default 50)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls of each kind (default 200)")
    parser.add_argument("--hook-runs", type=int, default=300, help="timed hook runs of each command (default 300)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed rounds of each part first (default 5)")
    parser.add_argument("--events", type=int, default=400, help="corpus events seeded for the calls (default 400)")
    parser.add_argument("--size", type=int, default=2048, help="hook payload bytes (default 2048)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    if unknown := set(parts) - {"startup", "calls", "launcher"}:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    result = Result(load_average=os.getloadavg()[0], parts=parts)
    if "startup" in parts or "calls" in parts:
        with isolated_daemon() as instance:
            record_launcher(instance)
            if "startup" in parts:
                measure_startup(instance, result, args.startup_runs, args.warmup)
            if "calls" in parts:
                measure_calls(instance, result, args.calls, args.warmup, args.events)
    if "launcher" in parts:
        with isolated_daemon(seed=without_embedding) as instance:
            record_launcher(instance)
            measure_launcher(instance, result, args.hook_runs, args.warmup, args.size)
    if args.json:
        print(json.dumps({**dataclasses.asdict(result), "ok": result.ok}, indent=2))
    else:
        print(report(result))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
