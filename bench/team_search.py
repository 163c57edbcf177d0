"""Team search on the sync server at scale (issue 31): ``memctl search --team`` over a million
shared events that no laptop holds.

A throwaway PostgreSQL with pgvector (``tests/pg.py``: the ``pgserver`` wheel's PostgreSQL 16 and
pgvector 0.6; 1 GB shared buffers, as a small dedicated server would have) holds ``--events`` team
rows of one team: the bench corpus's events (``bench/corpus.py``, as the daemon stores them) pushed
as a teammate's machine pushes them: the filtered body, the words the server makes of the title
and text, and a vector (the real embedding of the event's template plus noise, as ``corpus.py``
makes them: realistic neighbourhoods, so the HNSW index works as it would on real vectors).
Loaded with COPY, then indexed (GIN on the words, HNSW on the vectors), then ANALYZEd.

A daemon syncing as another member of the team, with ``pull_teams = false`` (the rows stay on the
server), answers ``TeamSearch`` over its socket as ``memctl search --team`` asks it:

``team search``   ``--queries`` queries (2-4 words of the corpus's prompts), each timed from request
                  to reply: the query's embedding, the words query, the vector query, fusion,
                  decoding and filtering the hits (p50, p99);
``words SQL``     the same queries' words query alone on a direct connection as that member;
``meaning SQL``   their vector query alone (the query vectors made once beforehand).

    .venv/bin/python bench/team_search.py [--events 1000000] [--queries 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np
import psycopg
from corpus import NOISE, Corpus, template_vectors
from harness import REPO, isolated_daemon, markdown_table, summary

sys.path.insert(0, str(REPO / "tests"))
from pg import PgDatabase, PgServer, pgvector_bindir  # the tests' real server

from memd.config import EmbeddingConfig
from memd.protocol import ExportedEvent, TeamResults, TeamSearch
from memd.services.embed import Embedder
from memd.store import remote_search
from memd.store.remote import SCHEMA, VECTORS, WORDS_INDEX, vector_text
from memd_wire.paths import Paths

PASSWORD = "bench-pw"
TEAM = "memd_team_bench"
TUNING = """
shared_buffers = 1GB
work_mem = 64MB
maintenance_work_mem = 4GB
max_parallel_maintenance_workers = 2
effective_cache_size = 4GB
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    log = (lambda _: None) if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    server = PgServer(pgvector_bindir())
    with open(server.data / "postgresql.conf", "a") as conf:
        conf.write(TUNING)
    server.start()
    try:
        db = PgDatabase(server)
        for role in ("alice", "bob", TEAM):
            db.create_role(role, PASSWORD)
        db.sql(f"GRANT {TEAM} TO alice, bob")
        db.sql(SCHEMA)
        db.sql(VECTORS)
        db.sql(WORDS_INDEX)  # as a superuser's `memctl sync setup` does
        started = time.perf_counter()
        prompts = load(db, args.events, log)
        loaded = time.perf_counter() - started
        log(f"loaded and indexed {args.events} rows in {loaded:.0f} s")
        queries = [" ".join(random.Random(n).sample(words, min(len(words), random.Random(-n).randint(2, 4))))
                   for n, words in enumerate(prompts[: args.queries])]  # fmt: skip
        result = measure(db, queries, log)
        result |= {"events": args.events, "load_seconds": round(loaded), "queries": len(queries),
                   "load_average": round(os.getloadavg()[0], 1)}  # fmt: skip
        size = db.sql("SELECT pg_size_pretty(pg_total_relation_size('memd.log'))")[0][0]
        result["table_size"] = size
    finally:
        server.close()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"team search on the server, {args.events} team rows ({size} with indexes), {len(queries)} queries\n")
    names = (("team search (daemon, end to end)", "team_ms"), ("words SQL", "words_ms"), ("meaning SQL", "meaning_ms"))
    rows = [[name, result[key]["p50"], result[key]["p99"]] for name, key in names]
    print(markdown_table(["ms", "p50", "p99"], rows))
    print(f"\nhits per query: {result['hits_mean']:.1f} (mode {result['modes']})")
    print("slowest words queries: " + "; ".join(result["slowest_words"]))
    return 0


def load(db: PgDatabase, n: int, log: Any) -> list[list[str]]:
    """``n`` corpus events as alice's team rows; the words of some prompts, for queries."""
    corpus = Corpus(1)
    cache = os.path.join(tempfile.gettempdir(), "memd-bench-cache")
    templates = template_vectors(corpus, cache, os.path.join(cache, "models"), log)
    rng = np.random.default_rng(1)
    prompts: list[list[str]] = []
    encoder = msgspec.json.Encoder()
    db.sql("CREATE UNLOGGED TABLE staging (event_key text, project_key text, body bytea, title text, text text,"
           " embedding text)")  # fmt: skip
    with db.server.admin(db.name) as conn, conn.cursor() as cur, cur.copy("COPY staging FROM STDIN") as copy:
        for count, (event, item) in enumerate(corpus.events(n, workers=2), 1):
            vector = templates[item.template] + rng.normal(0, NOISE, templates.shape[1]).astype(np.float32)
            vector /= np.linalg.norm(vector)
            body = ExportedEvent(
                cite="", idem_key=event.idem_key, event=event.event, kind=event.kind, session_id=event.session_id,
                project=item.root, tool=event.tool, title=event.title, text=event.text, meta={},
                importance=event.importance, client_ts=event.client_ts, received_at=event.received_at,
            )  # fmt: skip
            project = "github.com/acme/" + Path(item.root).name
            text = event.text[:50_000].replace("\0", " ")
            copy.write_row((event.idem_key, project, encoder.encode(body), event.title, text, vector_text(vector)))
            if event.kind == "prompt" and count % max(1, n // 2000) == 0 and not item.korean:
                prompts.append([w for w in event.title.split() if w.isalpha() and len(w) > 3])
            if count % 100_000 == 0:
                log(f"  {count}/{n} rows copied")
    steps = (
        ("rows", "INSERT INTO memd.log (owner, scope, team, op, event_key, project_key, machine, body, words,"
                 f" embedding) SELECT 'alice', 'team', '{TEAM}', 'put', event_key, project_key, 'm-bench', body,"
                 " setweight(to_tsvector('english', title), 'A') || to_tsvector('english', text), embedding::vector"
                 " FROM staging"),
        ("staging dropped", "DROP TABLE staging"),
        ("analyzed", "VACUUM ANALYZE memd.log"),
    )  # fmt: skip
    # The indexes are made after the rows (as a restore would): building them whole is faster than
    # growing them a row at a time.
    db.sql("DROP INDEX memd.log_words; DROP INDEX memd.log_embedding")
    for name, sql in steps:
        started = time.perf_counter()
        db.sql(sql)
        log(f"  {name} in {time.perf_counter() - started:.0f} s")
    for name, sql in (
        ("words index", "CREATE INDEX log_words ON memd.log USING gin (words) WHERE words IS NOT NULL"),
        ("vector index", "CREATE INDEX log_embedding ON memd.log USING hnsw (embedding vector_cosine_ops)"
                         " WHERE embedding IS NOT NULL"),
    ):  # fmt: skip
        started = time.perf_counter()
        db.sql(sql)
        log(f"  {name} in {time.perf_counter() - started:.0f} s")
    return [words for words in prompts if len(words) >= 2]


def measure(db: PgDatabase, queries: list[str], log: Any) -> dict[str, Any]:
    """Each query through the daemon, then its words and vector queries alone on a direct
    connection, interleaved; after one untimed pass over them all (the server's cache warm,
    as a team's working set would be)."""
    url = db.server.dsn("bob", PASSWORD, db.name)
    quiet_by = time.monotonic() + 1800  # the machine is shared: measure once it is quiet, or in 30 min
    while os.getloadavg()[0] > 1.5 and time.monotonic() < quiet_by:
        time.sleep(10)
    log(f"  measuring at load {os.getloadavg()[0]:.1f}")
    cache = os.path.join(tempfile.gettempdir(), "memd-bench-cache")
    embedder = Embedder(EmbeddingConfig(), os.path.join(cache, "models"))
    embedder.load()
    vectors = [vector_text(embedder.embed_query(q).tolist()) for q in queries]

    def seed(paths: Paths) -> None:
        with open(paths.config_file, "a") as f:
            f.write(f'\n[sync]\nurl = "{url}"\nmachine = "bench"\npull_teams = false\n')

    samples: dict[str, list[float]] = {"team_ms": [], "words_ms": [], "meaning_ms": []}
    hits, modes, slowest = [], set(), []
    with isolated_daemon(seed=seed) as daemon, daemon.client() as client:
        deadline = time.monotonic() + 300
        while (mode := client.call(TeamSearch(query="warm up", all_projects=True), TeamResults)).mode != "hybrid":
            if time.monotonic() > deadline:
                raise RuntimeError(f"team search never hybrid: {mode.notice}")
            time.sleep(0.2)  # the model loading

        async def run() -> None:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                for timed in (False, True):
                    for query, vector in zip(queries, vectors, strict=True):
                        t0 = time.perf_counter()
                        reply = client.call(TeamSearch(query=query, all_projects=True), TeamResults)
                        t1 = time.perf_counter()
                        await remote_search.by_words(conn, query, 30, None, None)
                        t2 = time.perf_counter()
                        await remote_search.by_meaning(conn, vector, 30, None, None)
                        t3 = time.perf_counter()
                        if timed:
                            for key, ms in zip(samples, ((t1 - t0), (t2 - t1), (t3 - t2)), strict=True):
                                samples[key].append(ms * 1000)
                            hits.append(len(reply.results))
                            modes.add(reply.mode)
                            slowest.append(((t2 - t1) * 1000, query))

        anyio.run(run)
    log(f"  team search: p50 {summary(samples['team_ms'])['p50']:.1f} ms")
    return {key: summary(values) for key, values in samples.items()} | {
        "hits_mean": sum(hits) / len(hits), "modes": sorted(modes),
        "slowest_words": [f"{ms:.0f} ms: {query}" for ms, query in sorted(slowest, reverse=True)[:3]],
    }  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
