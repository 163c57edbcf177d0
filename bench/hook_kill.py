"""Claude Code's kill of a hook still running, played against memd's hook client.

When ``claude -p`` ends, it kills each async hook still running the way it kills every
command it started (2.1.328's shell runner): SIGTERM to the command's process and to each
of its descendants, then, if that tree is not gone 1.5 s later, SIGKILL to its process
group; and it exits only once the tree is gone or killed.  So a hook client that is killed
before it has installed its handler loses its event, and one that is slow to act on the
SIGTERM keeps the whole run waiting ("lingering") up to 1.5 s.

This bench spawns the hook the way Claude Code does (``/bin/sh -c COMMAND`` in a session of
its own, the event written to its stdin and closed), plays that kill ``--delays`` ms after
the spawn, under ``--load`` busy processes, and counts for each command form:

- lost: events neither stored by the daemon nor spooled (the daemon is restarted at the
  end, and drains the spool as it starts);
- linger: ms from the SIGTERM to the tree's end (p50, p95, max), and how many kills had
  to end in the SIGKILL.

The forms: ``bare``, the command ``memctl install`` wrote before its signal guard
(``python -I -S hook.py EVENT``); ``settings``, what it writes now (``memctl
hook-command``); ``plugin``, the plugin's ``sh memd-launch hook EVENT``.

    .venv/bin/python bench/hook_kill.py [--runs 40] [--delays 0,1,2,5,10,20,50] [--load 4] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from harness import Instance, isolated_daemon, markdown_table, payload_factory, summary

from memd_client.memctl.claude import hook_command
from memd_wire import launcher

REPO = Path(__file__).resolve().parent.parent
SIGKILL_AFTER = 1.5
"""Claude Code's grace between its SIGTERM and its SIGKILL of a command's tree."""
POLL = 0.005


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (by parent pid, as Claude Code's tree kill finds them)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += children.get(p, [])
    return tree


def alive(pids: list[int]) -> bool:
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().split(b") ", 1)[1][:1] != b"Z":
                    return True
        except OSError:
            continue
    return False


def kill_like_claude(proc: subprocess.Popen[bytes], delay_ms: float) -> tuple[float, bool]:
    """SIGTERM the tree ``delay_ms`` after the spawn, SIGKILL its group 1.5 s later if need be:
    (ms from the SIGTERM until the tree is gone, whether the SIGKILL was needed)."""
    time.sleep(delay_ms / 1000)
    tree = descendants(proc.pid)
    signalled = time.perf_counter()
    for pid in tree:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    while time.perf_counter() - signalled < SIGKILL_AFTER:
        if proc.poll() is not None and not alive(tree):
            return (time.perf_counter() - signalled) * 1000, False
        time.sleep(POLL)
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return (time.perf_counter() - signalled) * 1000, True


@contextmanager
def cpu_load(processes: int) -> Iterator[None]:
    """``processes`` busy loops at the usual priority: the other sessions and agents of a busy machine."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for p in busy:
            p.kill()
            p.wait()


def forms(instance: Instance) -> dict[str, str]:
    """The command of each form, for PostToolUse (an async hook, the one Claude Code kills)."""
    launcher.record(instance.paths)  # what the plugin's launcher reads, under this instance's state dir
    bare = shlex.join([sys.executable, "-I", "-S", launcher.HOOK_SCRIPT, "PostToolUse"])
    plugin = f"sh {shlex.quote(str(REPO / 'hooks' / 'memd-launch'))} hook PostToolUse"
    return {"bare": bare, "settings": hook_command("PostToolUse"), "plugin": plugin}


def trial(command: str, payload: bytes, env: dict[str, str], delay_ms: float) -> tuple[float, bool]:
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=env, start_new_session=True,
    )  # fmt: skip
    assert proc.stdin is not None
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except BrokenPipeError:  # killed already (a delay of 0 on a slow spawn): nothing read it
        pass
    return kill_like_claude(proc, delay_ms)


def stored_ids(instance: Instance) -> set[str]:
    import sqlite3

    conn = sqlite3.connect(f"file:{instance.paths.database}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT json_extract(payload, '$.tool_use_id') FROM events WHERE event = 'PostToolUse'")
        return {row[0] for row in rows}
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40, help="kills per form and delay (default 40)")
    parser.add_argument("--delays", default="0,1,2,5,10,20,50", help="ms from spawn to SIGTERM")
    cpus = os.cpu_count() or 1
    parser.add_argument("--load", type=int, default=2 * cpus, help="busy processes (default 2 per CPU)")
    parser.add_argument("--forms", default="bare,settings,plugin")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    delays = [float(d) for d in args.delays.split(",")]
    make = payload_factory(2048)
    token = uuid.uuid4().hex[:10]
    results: dict[str, dict[str, object]] = {}
    with isolated_daemon() as instance:
        commands = {name: command for name, command in forms(instance).items() if name in args.forms.split(",")}
        sent: dict[str, dict[float, list[str]]] = {name: {d: [] for d in delays} for name in commands}
        linger: dict[str, list[float]] = {name: [] for name in commands}
        killed: dict[str, int] = dict.fromkeys(commands, 0)
        with cpu_load(args.load):
            for run in range(args.runs):
                for delay in delays:
                    for name, command in commands.items():  # interleaved: the forms share the noise
                        tool_use_id = f"toolu_kill_{token}_{name}_{run}_{delay:g}"
                        ms, hard = trial(command, make(tool_use_id), instance.env, delay)
                        sent[name][delay].append(tool_use_id)
                        linger[name].append(ms)
                        killed[name] += hard
        instance.proc.send_signal(signal.SIGTERM)
        instance.proc.wait(timeout=30)
        drain = subprocess.Popen([sys.executable, "-m", "memd"], env=instance.env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while instance.spooled() and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)  # the drain's last commit
            have = stored_ids(instance)
        finally:
            drain.terminate()
            drain.wait(timeout=30)
        for name in commands:
            lost = {f"{d:g}": sum(i not in have for i in ids) for d, ids in sent[name].items()}
            results[name] = {
                "command": commands[name],
                "sent": sum(len(ids) for ids in sent[name].values()),
                "lost": sum(lost.values()),
                "lost_by_delay_ms": lost,
                "linger_ms": summary(linger[name]) | {"max": max(linger[name])},
                "sigkilled": killed[name],
            }
    report = {"runs": args.runs, "delays_ms": delays, "load": args.load, "cpus": os.cpu_count(), "forms": results}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"kills like Claude Code's: {args.runs} per form and delay ({args.delays} ms after spawn),"
          f" {args.load} busy processes on {os.cpu_count()} CPUs")  # fmt: skip
    rows = [
        [name, r["sent"], r["lost"], " ".join(f"{d}:{n}" for d, n in r["lost_by_delay_ms"].items() if n),  # type: ignore[union-attr]
         r["linger_ms"]["p50"], r["linger_ms"]["p95"], r["linger_ms"]["max"], r["sigkilled"]]  # type: ignore[index]
        for name, r in results.items()
    ]  # fmt: skip
    print(markdown_table(["form", "sent", "lost", "lost at ms", "linger p50", "p95", "max", "SIGKILLed"], rows))
    for name, r in results.items():
        print(f"{name}: `{r['command']}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
