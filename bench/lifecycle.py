"""Forgetting and retention at scale: forget latency per selector, the FTS5 merge that makes
deleted text leave the file, and a retention pass (``memctl gc``).

Databases come from ``bench/search.py``'s cache (``/tmp/memd-bench-corpus/``, built by
``bench/corpus.py`` if missing).  Parts (``--parts``, default all):

``forget``  a real daemon (``python -m memd``) on a copy of the N-event data dir, once its
            vector index is ready: ``Forget`` requests over the socket, each selector in
            turn on its own targets (a random prompt; ten of them; one whole session; a rare
            and a common word; the oldest 1% of events), dry run and real; the wall time of
            each, and the daemon's own split (``forgotten`` log line: the deletes, then the
            purge: both keyword indexes merged into one segment, free pages, WAL truncated);
``merge``   on a copy, in-process: one event deleted, then each keyword index merged into
            one segment (a) by FTS5 ``optimize`` in one statement, (b) by ``merge`` steps of
            ``MERGE_PAGES`` pages as memd does (total and longest step: how long hooks wait);
``gc``      a real daemon on another copy: ``Gc`` dry run, the pass (the corpus is dated
            months back: every unprotected low-importance event goes), then ``Gc(vacuum)``
            (the one-time VACUUM that switches the file to incremental vacuum).

Retention is off in these daemons (``bench/harness.py``), so nothing goes but what is asked.

    .venv/bin/python bench/lifecycle.py [--sizes 100000] [--parts forget,merge,gc] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from typing import Any

import msgspec
from harness import Instance, isolated_daemon, markdown_table
from search import copy_corpus, ensure_database, log

from memd.protocol import Collected, Forget, Forgotten, Gc, Reply
from memd.store.reclaim import KEYWORD_INDEXES, MERGE_PAGES, merge_step
from memd_client.rpc import Client

TIMEOUT = 600.0


def _ready(instance: Instance) -> float:
    """Seconds until the vector index is open (it is rebuilt from the stored vectors)."""
    started = time.perf_counter()
    while (status := instance.status()).embedding is None or status.embedding.state != "ready":
        if instance.proc.poll() is not None or time.perf_counter() - started > TIMEOUT:
            raise RuntimeError(f"the daemon did not become ready:\n{instance.log_tail()}")
        time.sleep(0.2)
    return time.perf_counter() - started


def _timed(instance: Instance, request: Any, expect: type[Reply]) -> tuple[Any, float]:
    with Client(instance.paths.socket, timeout=TIMEOUT) as client:
        started = time.perf_counter()
        reply = client.call(request, expect)
        return reply, (time.perf_counter() - started) * 1000


def _logged(instance: Instance, event: str) -> list[dict[str, Any]]:
    with open(instance.paths.log_file, encoding="utf-8") as f:
        return [line for line in map(json.loads, f) if line.get("event") == event]


def targets(path: str, seed: int) -> list[tuple[str, Callable[[], Forget]]]:
    """(what, request) per forget measured, each on events no earlier one took."""
    rng = random.Random(seed)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        prompts = [row[0] for row in conn.execute("SELECT id FROM events WHERE kind = 'prompt' ORDER BY id")]
        picked = rng.sample(prompts, 16)
        sessions = [row[0] for row in conn.execute("SELECT id FROM sessions WHERE events BETWEEN 50 AND 80")]
        rare = [row[0] for row in conn.execute(
            "SELECT term FROM events_fts_terms WHERE doc BETWEEN 3 AND 6 AND term GLOB '[a-z]*' AND length(term) > 6"
            " ORDER BY term LIMIT 200")]  # fmt: skip
        common = [row[0] for row in conn.execute(
            "SELECT term FROM events_fts_terms WHERE doc BETWEEN 300 AND 600 AND term GLOB '[a-z]*'"
            " AND length(term) > 5 ORDER BY term LIMIT 200")]  # fmt: skip
        (cutoff,) = conn.execute(
            "SELECT client_ts FROM events ORDER BY client_ts LIMIT 1 OFFSET (SELECT count(*) / 100 FROM events)"
        ).fetchone()
    finally:
        conn.close()
    out: list[tuple[str, Callable[[], Forget]]] = []
    out += [("ids: 1 prompt", lambda i=i: Forget(ids=[str(i)])) for i in picked[:5]]
    out += [("ids: 10 prompts", lambda: Forget(ids=[str(i) for i in picked[5:15]]))]
    out += [("session", lambda s=s: Forget(session=s)) for s in rng.sample(sessions, 3)]
    out += [("query: rare word", lambda w=w: Forget(query=w, all_projects=True)) for w in rng.sample(rare, 3)]
    out += [("query: common word", lambda w=w: Forget(query=w, all_projects=True)) for w in rng.sample(common, 2)]
    out += [("before: oldest 1%", lambda: Forget(before=cutoff, all_projects=True))]
    return out


def forget_part(n: int, path: str, seed: int) -> list[list[object]]:
    rows: list[list[object]] = []
    with isolated_daemon(seed=copy_corpus(path)) as instance:
        log(f"  index ready in {_ready(instance):.1f} s")
        for what, make in targets(path, seed):
            _preview, dry_ms = _timed(instance, msgspec.structs.replace(make(), dry_run=True), Forgotten)
            reply, ms = _timed(instance, make(), Forgotten)
            split = _logged(instance, "forgotten")[-1] if reply.total else {}
            rows.append([
                f"{n:,}", what, reply.total, reply.derived, reply.refreshed, reply.vectors, round(dry_ms, 1),
                round(ms), split.get("delete_ms", 0), split.get("ms", 0) - split.get("delete_ms", 0),
            ])  # fmt: skip
            log(f"  {what}: {reply.total} events in {ms:.0f} ms")
    return rows


def merge_part(n: int, path: str) -> list[list[object]]:
    rows: list[list[object]] = []
    for how in ("optimize", "merge steps"):
        directory = tempfile.mkdtemp(prefix="memd-bench-merge-", dir="/tmp")
        try:
            copy = os.path.join(directory, "memd.sqlite3")
            shutil.copyfile(path, copy)
            conn = sqlite3.connect(copy, isolation_level=None)
            conn.execute("PRAGMA journal_mode = WAL")
            (event_id,) = conn.execute("SELECT id FROM events WHERE kind = 'prompt' AND cjk LIMIT 1").fetchone()
            conn.execute("DELETE FROM events WHERE id = ?", (event_id,))
            for table in KEYWORD_INDEXES:
                (size,) = conn.execute(f"SELECT sum(length(block)) FROM {table}_data").fetchone()
                steps: list[float] = []
                if how == "optimize":
                    started = time.perf_counter()
                    conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
                    steps.append(time.perf_counter() - started)
                else:
                    done, first = False, True
                    while not done:
                        started = time.perf_counter()
                        done = merge_step(conn, table, first)
                        steps.append(time.perf_counter() - started)
                        first = False
                wal = os.path.getsize(copy + "-wal")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                rows.append([
                    f"{n:,}", table, f"{size / 1e6:.1f}", how, len(steps), round(sum(steps) * 1000),
                    round(max(steps) * 1000), f"{wal / 1e6:.1f}",
                ])  # fmt: skip
            conn.close()
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    return rows


def gc_part(n: int, path: str) -> list[list[object]]:
    rows: list[list[object]] = []
    with isolated_daemon(seed=copy_corpus(path)) as instance:
        _ready(instance)
        for what, request in (("dry run", Gc(dry_run=True)), ("pass", Gc()), ("--vacuum", Gc(vacuum=True))):
            reply, ms = _timed(instance, request, Collected)
            rows.append([
                f"{n:,}", what, reply.total, reply.aged, reply.vectors, reply.refreshed, reply.auto_vacuum,
                f"{reply.bytes_before / 1e6:.1f}", f"{reply.bytes_after / 1e6:.1f}", round(ms),
            ])  # fmt: skip
            log(f"  gc {what}: {reply.total} events in {ms:.0f} ms")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--parts", default="forget,merge,gc")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    for n in [int(s.replace("_", "")) for s in args.sizes.split(",") if s]:
        path, _built = ensure_database(n, args.seed)
        if "forget" in parts:
            log(f"forget at {n}")
            print(f"\nforget at {n:,} events: a real daemon, over the socket; the daemon's split from its log\n")
            headers = ["events", "selector", "forgotten", "derived", "sessions", "vectors", "dry run ms", "forget ms",
                       "delete ms", "purge ms"]  # fmt: skip
            print(markdown_table(headers, forget_part(n, path, args.seed)))
        if "merge" in parts:
            log(f"merge at {n}")
            print(
                f"\nkeyword indexes merged into one segment after a delete, {n:,} events ({MERGE_PAGES}-page steps)\n"
            )
            headers = ["events", "index", "MB", "how", "statements", "total ms", "longest ms", "WAL MB"]
            print(markdown_table(headers, merge_part(n, path)))
        if "gc" in parts:
            log(f"gc at {n}")
            print(f"\nretention at {n:,} events (memctl gc; defaults: 90 days, importance <= 1)\n")
            headers = ["events", "gc", "removed", "aged", "vectors", "sessions", "auto_vacuum", "MB before",
                       "MB after", "ms"]  # fmt: skip
            print(markdown_table(headers, gc_part(n, path)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
