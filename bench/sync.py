"""Sync lag and throughput through a real PostgreSQL server (issue 20).

A throwaway PostgreSQL cluster (``tests/pg.py``: Debian's server binaries, a private temp
dir) with memd's schema and one role; two isolated daemons (``harness.isolated_daemon``,
embedding on) syncing as that role, each with its own checkout of one repository.

``lag``         a prompt with a word of its own captured on A through the real hook client,
                then B searched every 5 ms in its own checkout until it finds it: ms from
                the hook's start to B's first hit (``--events`` of them, one at a time).
``forget lag``  ``--forgets`` of those prompts forgotten on A (a ``Forget`` by their word,
                over the socket), then B searched every 5 ms until it no longer finds it: ms
                from the request to B's first empty answer.  Rounds are ``[sync] interval``
                (5 s) apart: a forget wakes the sync as an event does (issue 31).
``throughput``  ``--bulk`` tool events ingested on A over the socket, then the seconds
                until B has applied them all, and events/s.

    .venv/bin/python bench/sync.py [--events 100] [--forgets 20] [--bulk 10000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from harness import REPO, isolated_daemon, markdown_table, summary

sys.path.insert(0, str(REPO / "tests"))
from pg import PgServer  # the tests' real server

from memd.protocol import Forget, Forgotten, Ingest, Ingested, Search, SearchResults
from memd.store.remote import SCHEMA
from memd_wire.launcher import HOOK_SCRIPT
from memd_wire.paths import Paths

PASSWORD = "bench-pw"


def repository(path: Path) -> str:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/bench.git\n')
    return str(path)


def syncing(url: str, machine: str) -> Callable[[Paths], None]:
    def seed(paths: Paths) -> None:
        with open(paths.config_file, "a") as f:
            f.write(f'\n[sync]\nurl = "{url}"\nmachine = "{machine}"\n')

    return seed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100, help="prompts timed one at a time (default 100)")
    parser.add_argument("--forgets", type=int, default=20, help="of those, forgotten one by one (default 20)")
    parser.add_argument("--bulk", type=int, default=10_000, help="events for the throughput run (default 10000)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = PgServer()
    server.start()
    root = Path(tempfile.mkdtemp(prefix="memd-bench-sync-", dir="/tmp"))
    try:
        server.create_role("alice", PASSWORD)
        server.create_database("memd")
        server.sql(SCHEMA, dbname="memd")
        url = server.dsn("alice", PASSWORD, "memd")
        here, there = repository(root / "a" / "api"), repository(root / "b" / "api")
        with isolated_daemon(seed=syncing(url, "a")) as a, isolated_daemon(seed=syncing(url, "b")) as b:
            with b.client() as client:
                timed = [lag(a.env, client, here, there) for _ in range(args.events)]
            lags = [ms for ms, _ in timed]
            with a.client() as on_a, b.client() as on_b:
                forgets = [forget_lag(on_a, on_b, here, there, word) for _, word in timed[: args.forgets]]
            with a.client() as client:
                seconds, rate = throughput(client, b, here, args.bulk)
    finally:
        server.close()
    result = {
        "lag_ms": summary(lags), "forget_lag_ms": summary(forgets), "bulk": args.bulk, "bulk_seconds": seconds,
        "events_per_s": rate,
    }  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    s = result["lag_ms"]
    print(f"sync lag, capture on A -> found by search on B, {args.events} prompts one at a time\n")
    f = result["forget_lag_ms"]
    rows = [["lag", s["p50"], s["p95"], s["p99"]], [f"forget lag ({args.forgets})", f["p50"], f["p95"], f["p99"]]]
    print(markdown_table(["ms", "p50", "p95", "p99"], rows))
    print(f"\nthroughput: {args.bulk} events captured on A applied on B in {seconds:.1f} s ({rate:.0f} events/s)")
    return 0


def lag(env: dict[str, str], client, here: str, there: str) -> tuple[float, str]:  # type: ignore[no-untyped-def]
    word = f"zq{uuid.uuid4().hex[:10]}"
    payload = {"session_id": f"s-{word}", "cwd": here, "hook_event_name": "UserPromptSubmit",
               "prompt": f"why does {word} fail", "transcript_path": "/dev/null"}  # fmt: skip
    started = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-S", HOOK_SCRIPT, "UserPromptSubmit"], input=json.dumps(payload).encode(),
                   env=env, capture_output=True, check=True)  # fmt: skip
    while not client.call(Search(query=word, cwd=there, lanes=["keyword"]), SearchResults).results:
        if time.perf_counter() - started > 60:
            raise RuntimeError(f"{word} never reached B")
        time.sleep(0.005)
    return (time.perf_counter() - started) * 1000, word


def forget_lag(on_a, on_b, here: str, there: str, word: str) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    on_a.call(Forget(query=word, cwd=here), Forgotten)
    while on_b.call(Search(query=word, cwd=there, lanes=["keyword"]), SearchResults).results:
        if time.perf_counter() - started > 60:
            raise RuntimeError(f"the forget of {word} never reached B")
        time.sleep(0.005)
    return (time.perf_counter() - started) * 1000


def throughput(client, b, here: str, count: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    before = applied(b)
    started = time.perf_counter()
    for n in range(count):
        payload = {"session_id": f"s-bulk-{n // 500}", "cwd": here, "hook_event_name": "PostToolUse",
                   "tool_name": "Bash", "tool_use_id": f"toolu_bulk_{n:06d}", "tool_input": {"command": f"make {n}"},
                   "tool_response": {"stdout": f"step {n} done", "stderr": "", "interrupted": False}}  # fmt: skip
        client.call(
            Ingest(event="PostToolUse", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode()), Ingested
        )
    while applied(b) < before + count:
        if time.perf_counter() - started > 600:
            raise RuntimeError("B did not apply the bulk in 10 minutes")
        time.sleep(0.1)
    seconds = time.perf_counter() - started
    return seconds, count / seconds


def applied(b) -> int:  # type: ignore[no-untyped-def]
    import sqlite3

    conn = sqlite3.connect(f"file:{b.paths.database}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM sync_remote").fetchone()[0])
    finally:
        conn.close()


if __name__ == "__main__":
    os.environ.pop("MEMD_SYNC_URL", None)
    sys.exit(main())
