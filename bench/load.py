"""Many busy sessions at once: does capture stay ahead of embedding and search?

For each level of ``--sessions`` (default 8, 32, 64), on a fresh daemon with the embedding
model on: first 200 events and the search latency of an idle daemon; then that many
sessions at once, each sending ``--events`` hook events one after another through the real
hook client (a prompt, a Bash call with 2 KB of output, a Read of a 5 KB file, a reply, in
turn), while a searcher asks a query every 0.25 s.  Reports:

- the hook's wall time (spawn to exit), p50 and p99, for the synchronous hooks Claude Code
  waits for (the prompt, the reply) and the asynchronous tool hooks apart;
- the daemon's own ingest time (a whole request received to its reply ready), p50, p99;
- events spooled: handed to the spool because the daemon did not answer within the hook's
  deadline (the bench's daemon never drains its spool, so every one is counted);
- search p50 and p99 under load, against the idle figure;
- the embedding backlog when the load ends, and how long it takes to clear.

    .venv/bin/python bench/load.py [--sessions 8,32,64] [--events 150] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness import Instance, isolated_daemon, markdown_table

from memd.metrics import percentile
from memd.protocol import Ingest, Ingested, Search, SearchResults
from memd_wire.launcher import HOOK_SCRIPT
from memd_wire.paths import Paths

SEARCH_EVERY = 0.25
WORDS = ["deploy", "cookie", "login", "test", "flaky", "cache", "index", "session", "token", "migration", "build"]


def pct(values: list[float], q: float) -> float:
    return percentile(sorted(values), q)


def payload(session: str, cwd: str, n: int) -> tuple[str, bytes]:
    """The ``n``-th event of a session: prompt, Bash, Read, reply, in turn."""
    base = {"session_id": session, "cwd": cwd, "transcript_path": "/dev/null", "prompt_id": f"{session}-{n // 4}"}
    words = " ".join(random.Random(n).choice(WORDS) for _ in range(30))
    kind = n % 4
    if kind == 0:
        return "UserPromptSubmit", json.dumps({**base, "hook_event_name": "UserPromptSubmit",
                                               "prompt": f"Step {n}: {words}"}).encode()  # fmt: skip
    if kind == 1:
        return "PostToolUse", json.dumps({
            **base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"t-{session}-{n}",
            "tool_input": {"command": f"pytest -x tests/test_{n}.py", "description": "Run the tests"},
            "tool_response": {"stdout": (words + "\n") * 12, "stderr": "", "interrupted": False},
        }).encode()  # fmt: skip
    if kind == 2:
        return "PostToolUse", json.dumps({
            **base, "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_use_id": f"t-{session}-{n}",
            "tool_input": {"file_path": f"{cwd}/src/module_{n}.py"},
            "tool_response": {"type": "text", "file": {"filePath": f"{cwd}/src/module_{n}.py",
                                                       "content": (f"def f_{n}(): return '{words}'\n") * 25}},
        }).encode()  # fmt: skip
    return "Stop", json.dumps({**base, "hook_event_name": "Stop", "stop_hook_active": False,
                               "last_assistant_message": f"Done with step {n}: {words}"}).encode()  # fmt: skip


BACKGROUND = ("PostToolUse", "PostToolUseFailure")
"""Hooks Claude Code runs asynchronously (memd's hooks.json): nobody waits for them."""


def run_session(instance: Instance, session: str, cwd: str, events: int, out: dict[str, list[float]]) -> None:
    for n in range(events):
        event, body = payload(session, cwd, n)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", HOOK_SCRIPT, event], input=body, env=instance.env,
                       capture_output=True, timeout=60)  # fmt: skip
        out["async" if event in BACKGROUND else "sync"].append((time.perf_counter() - started) * 1000)


def search_once(instance: Instance, rng: random.Random) -> float:
    query = " ".join(rng.sample(WORDS, 3))
    started = time.perf_counter()
    with instance.client() as client:
        client.call(Search(query=query, all_projects=True, limit=10), SearchResults)
    return (time.perf_counter() - started) * 1000


def wait_embedded(instance: Instance, timeout: float) -> float:
    """Seconds until the embedding backlog is empty (the model ready)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        embedding = instance.status().embedding
        if embedding is not None and embedding.state == "ready" and embedding.backlog == 0:
            break
        time.sleep(0.2)
    return time.monotonic() - started


def level(sessions: int, events: int, embedding: bool = True) -> dict[str, float]:
    def config(paths: Paths) -> None:
        if not embedding:
            with open(paths.config_file, "a") as f:
                f.write("\n[embedding]\nenabled = false\n")

    with isolated_daemon(seed=config) as instance:
        cwd = str(Path(instance.root, "project"))
        Path(cwd).mkdir()
        with instance.client() as client:  # a store to search: 200 events, embedded
            for n in range(200):
                event, body = payload("seed", cwd, n)
                client.call(Ingest(event=event, sent_at_ns=time.time_ns(), payload=body), Ingested)
        if embedding:
            wait_embedded(instance, 300)
        rng = random.Random(sessions)
        idle = [search_once(instance, rng) for _ in range(40)]

        hook_ms: dict[str, list[float]] = {"sync": [], "async": []}
        searches: list[float] = []
        done = threading.Event()

        def searcher() -> None:
            while not done.is_set():
                searches.append(search_once(instance, rng))
                done.wait(SEARCH_EVERY)

        threads = [
            threading.Thread(target=run_session, args=(instance, f"s{i}", cwd, events, hook_ms))
            for i in range(sessions)
        ]
        search_thread = threading.Thread(target=searcher)
        started = time.monotonic()
        search_thread.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
        done.set()
        search_thread.join()
        report = instance.status()
        backlog = report.embedding.backlog if report.embedding else -1
        drain_s = wait_embedded(instance, 600) if embedding else 0.0
        ingest = report.latency_ms["ingest"]
        stored = report.events - 200
        return {
            "sessions": sessions,
            "events": sessions * events,
            "stored": stored,
            "spooled": len(instance.spooled()),
            "wall_s": round(wall, 1),
            "sync_hook_p50_ms": round(pct(hook_ms["sync"], 0.5), 1),
            "sync_hook_p99_ms": round(pct(hook_ms["sync"], 0.99), 1),
            "async_hook_p50_ms": round(pct(hook_ms["async"], 0.5), 1),
            "async_hook_p99_ms": round(pct(hook_ms["async"], 0.99), 1),
            "ingest_p50_ms": ingest.p50,
            "ingest_p99_ms": ingest.p99,
            "search_idle_p50_ms": round(statistics.median(idle), 1),
            "search_p50_ms": round(pct(searches, 0.5), 1),
            "search_p99_ms": round(pct(searches, 0.99), 1),
            "search_ratio": round(pct(searches, 0.5) / statistics.median(idle), 2),
            "searches": len(searches),
            "embed_backlog_at_end": backlog,
            "embed_drain_s": round(drain_s, 1),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", default="8,32,64")
    parser.add_argument("--events", type=int, default=150)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-embedding", action="store_true", help="the model off: what embedding costs the rest")
    args = parser.parse_args()
    results = [level(int(n), args.events, not args.no_embedding) for n in args.sessions.split(",")]
    if args.json:
        print(json.dumps(results))
    else:
        keys = list(results[0])
        print(markdown_table(keys, [[str(r[k]) for k in keys] for r in results]))
    return 0 if all(r["spooled"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
