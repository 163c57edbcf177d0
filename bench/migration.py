"""How long migration 15 (citation ids made from idempotency keys) holds a store's first start
after the upgrade: ``--events`` events in a store of schema 14 with their legacy ids, then
``migrate`` timed (the ids made in memory, the legacy ones kept as aliases), ``--runs`` times on
fresh copies.  The daemon serves nothing while it runs; the hooks spool meanwhile.

    .venv/bin/python bench/migration.py [--events 200000] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

from memd.cite import legacy_citation_id
from memd.store.schema import MIGRATIONS, migrate


def schema_14_store(path: str, events: int) -> None:
    """A store as the release before left it: migrations 1-14, ``events`` tool events, their legacy ids."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function("memd_citation_id", 2, legacy_citation_id, deterministic=True)
    older = [m for m in MIGRATIONS if m.version < 15]
    for migration in older:
        conn.executescript(f"BEGIN;\n{migration.sql}\nCOMMIT;")
        if migration.then is not None:
            conn.execute("BEGIN")
            migration.then(conn)
            conn.execute("COMMIT")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at REAL)"
    )
    conn.executemany("INSERT INTO schema_migrations VALUES (?, ?, 0)", [(m.version, m.name) for m in older])
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO events (idem_key, event, kind, title, text, payload, importance, client_ts, received_at, size)"
        " VALUES (?, 'PostToolUse', 'tool', 't', 'x', '{}', 2, 0, 0, 1)",
        [(f"PostToolUse:tool:toolu_{n:010d}",) for n in range(events)],
    )
    for salt in range(10):  # as migration 4 gave them: a collision (likely past ~300k events) takes the next salt
        conn.execute(
            f"INSERT INTO citations (cite, event_id) SELECT memd_citation_id(id, {salt}), id FROM events"
            " WHERE NOT EXISTS (SELECT 1 FROM citations c WHERE c.event_id = events.id) ON CONFLICT DO NOTHING"
        )
    conn.execute("COMMIT")
    conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="memd-bench-migration-", dir="/tmp")
    try:
        template = os.path.join(root, "template.sqlite3")
        schema_14_store(template, args.events)
        seconds = []
        for run in range(args.runs):
            path = os.path.join(root, f"run{run}.sqlite3")
            shutil.copy(template, path)
            conn = sqlite3.connect(path, isolation_level=None)
            started = time.perf_counter()
            done = migrate(conn)
            seconds.append(time.perf_counter() - started)
            assert [m.version for m in done] == [15], done
            assert conn.execute("SELECT count(*) FROM citations").fetchone() == (args.events,)
            conn.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = {"events": args.events, "seconds_median": round(statistics.median(seconds), 2),
              "seconds": [round(s, 2) for s in seconds], "load_average": round(os.getloadavg()[0], 1)}  # fmt: skip
    if args.json:
        print(json.dumps(result))
    else:
        print(f"migration 15 at {args.events} events: median {result['seconds_median']} s"
              f" ({', '.join(map(str, result['seconds']))}), load {result['load_average']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
