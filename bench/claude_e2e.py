"""The real Claude Code CLI with memd's plugin, against the same runs without memd.

Drives the pinned ``claude`` (tests/e2e/install_clis.py installs it) in headless mode
against the tests' fake of the Messages API: ``--sessions`` scripted sessions (a prompt
with tool calls; every fifth resumes the one before), each run twice back to back, once
by a user with memd's plugin and once by a user without memd.  Both users carry the same
recorder hook on every event, so the difference in wall time is memd's alone, and the
recorder's files are what Claude Code fired, against which memd's store is checked:

- lost: fired, never stored (after the spool is drained); duplicated: stored more often
  than fired;
- overhead: median plugin run minus median run without memd, and the ratio of the medians;
- stalls: pairs whose plugin run took more than 1 s longer than its twin;
- cancelled: "Hook ... cancelled" lines in Claude Code's debug logs (an async hook it killed);
- MCP connect: how long Claude Code waited for memd's MCP server at each plugin session's
  start ("Successfully connected ... in N ms" in its debug log), median.

``--floor`` adds two more users, interleaved the same way, to tell memd's share of the
overhead from what Claude Code charges any plugin of its shape: a stub plugin with the same
hooks.json (the same events, the same synchronous and async hooks, each through ``sh`` and
``python -I -S`` (by its path) that reads its stdin and exits) and the same slash commands, once
without an MCP server (``stub-hooks``) and once with a stub one that answers ``initialize``
and an empty ``tools/list`` (``stub``).  ``plugin`` minus ``stub`` is what memd itself adds.

    .venv/bin/python bench/claude_e2e.py [--sessions 100] [--json] [--floor]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from conftest import Instance  # noqa: E402  (the tests' isolated daemon)
from e2e.fake_api import FakeAnthropic  # noqa: E402
from e2e.harness import ClaudeCode, compaction_agent, fired, stored  # noqa: E402
from e2e.install_clis import install  # noqa: E402

TARGET_OVERHEAD_MS = 150.0
STALL_S = 1.0
CONNECTED = re.compile(r'MCP server "plugin:memd:memd": Successfully connected \(transport: stdio\) in (\d+)ms')


def script(n: int, project: Path) -> str:
    note = project / f"note-{n}.txt"
    return (
        f"Session {n}: keep the deploy notes\n"
        f"@write {note} deploy {n} uses blue/green\n"
        f"@bash grep -c blue {note}\n"
        f"@read {note}\n"
        f"@say Session {n} done."
    )


STUB_LAUNCH = """#!/bin/sh
# A plugin hook or MCP server that does nothing, as cheaply as a Python one can.
case "$1" in
    mcp) exec PYTHON -I -S "$(dirname "$0")/stub_mcp.py" ;;
    *) exec PYTHON -I -S -c "import sys; sys.stdin.buffer.read()" ;;
esac
"""

STUB_MCP = """import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "stub", "version": "0"}}
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    elif method == "tools/list":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}}
    else:
        reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no such method"}}
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""


def stub_plugin(folder: Path, mcp: bool) -> Path:
    """A plugin shaped like memd's (hooks.json, commands, maybe an MCP server) that does nothing."""
    (folder / ".claude-plugin").mkdir(parents=True)
    (folder / "hooks").mkdir()
    shutil.copytree(REPO / "hooks" / "commands", folder / "hooks" / "commands")
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    manifest["name"] = manifest["displayName"] = "stub"
    if not mcp:
        del manifest["mcpServers"]
    (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest, indent=2))
    hooks = (REPO / "hooks" / "hooks.json").read_text().replace("memd-launch", "stub-launch")
    (folder / "hooks" / "hooks.json").write_text(hooks)
    # The interpreter by its path, as memd's launcher runs it: a pyenv shim would cost ~80 ms a spawn.
    (folder / "hooks" / "stub-launch").write_text(STUB_LAUNCH.replace("PYTHON", shlex.quote(sys.executable)))
    (folder / "hooks" / "stub_mcp.py").write_text(STUB_MCP)
    if mcp:
        (folder / ".mcp.json").write_text((REPO / ".mcp.json").read_text().replace("memd-launch", "stub-launch"))
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--floor", action="store_true", help="also time stub plugins of the same shape")
    args = parser.parse_args()

    binary = install()
    memd = Instance(tempfile.mkdtemp(prefix="memd-bench-cc-", dir="/tmp"))
    memd.start()
    try:
        with FakeAnthropic() as api:
            root = Path(memd.root)
            plugin = ClaudeCode(binary, api.url, memd, root / "plugin", "plugin")
            bare = ClaudeCode(binary, api.url, memd, root / "none", "none")
            users = {"none": bare, "plugin": plugin}
            if args.floor:
                for name, mcp in (("stub-hooks", False), ("stub", True)):
                    folder = stub_plugin(root / f"{name}-plugin", mcp)
                    users[name] = ClaudeCode(binary, api.url, memd, root / name, "plugin", plugin_dir=folder)
            pairs: list[tuple[float, float]] = []
            seconds: dict[str, list[float]] = {name: [] for name in users}
            last: dict[str, str] = {}
            for n in range(args.sessions):
                runs = {}
                order = list(users)[n % len(users) :] + list(users)[: n % len(users)]  # who goes first rotates
                for name in order:
                    user = users[name]
                    resume = ["--resume", last[name]] if n % 5 == 4 and name in last else []
                    run = user.run(script(n, user.project), *resume)
                    last[name] = run.session_id
                    runs[name] = run
                    seconds[name].append(run.seconds)
                pairs.append((runs["none"].seconds, runs["plugin"].seconds))
                cancelled = sum(r.debug.count(") cancelled") for r in runs.values())
                if cancelled:
                    print(f"session {n}: {cancelled} hooks cancelled", file=sys.stderr)
            memd.wait_for(lambda: not memd.spooled(), timeout=60)
            time.sleep(1.0)  # the last async hooks
            want, have = fired(plugin, skip=compaction_agent), stored(plugin)
            debug = "".join(p.read_text(errors="replace") for p in plugin.debug_dir.glob("*.log"))
    finally:
        memd.stop()
        shutil.rmtree(memd.root, ignore_errors=True)
    bare_s = [a for a, _ in pairs]
    plugin_s = [b for _, b in pairs]
    overhead_ms = (statistics.median(plugin_s) - statistics.median(bare_s)) * 1000
    result = {
        "sessions": args.sessions,
        "events_fired": sum(want.values()),
        "events_stored": sum(have.values()),
        "lost": sum((want - have).values()),
        "duplicated": sum((have - want).values()),
        "none_median_s": round(statistics.median(bare_s), 3),
        "plugin_median_s": round(statistics.median(plugin_s), 3),
        "overhead_median_ms": round(overhead_ms, 1),
        "ratio_median": round(statistics.median(plugin_s) / statistics.median(bare_s), 3),
        "stalls_over_1s": sum(b - a > STALL_S for a, b in pairs),
        "worst_pair_delta_s": round(max(b - a for a, b in pairs), 3),
        "hooks_cancelled": debug.count(") cancelled"),
        "mcp_connect_median_ms": statistics.median(int(ms) for ms in CONNECTED.findall(debug))
        if CONNECTED.search(debug)
        else None,
    }
    for name in ("stub-hooks", "stub"):
        if name in seconds:
            median = statistics.median(seconds[name])
            result[f"{name}_median_s"] = round(median, 3)
            result[f"{name}_overhead_median_ms"] = round((median - statistics.median(bare_s)) * 1000, 1)
    if "stub" in seconds:
        result["memd_own_median_ms"] = round(
            (statistics.median(plugin_s) - statistics.median(seconds["stub"])) * 1000, 1
        )
    met = (
        result["lost"] == 0
        and result["duplicated"] == 0
        and overhead_ms <= TARGET_OVERHEAD_MS
        and result["stalls_over_1s"] == 0
    )
    if args.json:
        print(json.dumps({**result, "met": met}))
    else:
        for key, value in result.items():
            print(f"{key:>20}: {value}")
        print(f"{'target':>20}: 0 lost, 0 duplicated, overhead <= {TARGET_OVERHEAD_MS:.0f} ms, no stall: "
              + ("met" if met else "NOT met"))  # fmt: skip
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
