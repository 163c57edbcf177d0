"""Retrieval engine at scale: search latency, index rebuild, daemon memory, disk, trigram cost, embedding drain.

Databases come from ``bench/corpus.py`` (synthetic coding sessions through memd's real
capture pipeline; synthetic vectors from really embedded templates: read its docstring)
and are cached under ``/tmp/memd-bench-corpus/v<generator>-schema<hash>-seed<seed>-n<N>/`` so reruns
start at once.  Parts (``--parts``, default all):

``search``   per N in ``--sizes``: open the store in-process (``open_store``), start an
             ``Indexer`` with the real embedder (its start-up loads the usearch file or
             rebuilds it from the stored vectors; the file is deleted first for N <= 100k
             so the rebuild is timed), then run ``QUERIES`` through ``Retriever.search``
             (default limit 10), scoped to one project and with ``all_projects``, hybrid
             (query embedding included) and keyword-only (keyword, trigram, substring
             lanes), ``--reps`` times each after one warm-up; p50/p95 over all calls; then
             the same queries per lane and step, to see where the time goes;
``disk``     bytes per event (after ``wal_checkpoint(TRUNCATE)``), by table (``dbstat``),
             and the usearch file;
``rss``      the real daemon (``python -m memd``) on a copy of the 100k data dir: VmRSS
             and VmHWM after the index is ready and ``QUERIES`` were searched over the socket;
``trigram``  the 100k corpus built twice without vectors, with and without the
             ``events_cjk`` trigger: insert time and database size;
``drain``    a fresh real daemon (default config) once its model is ready: 1,000 corpus
             events ingested over the socket, then ``Status`` polled until every event
             has its head vector (``unembedded`` 0: findable by meaning) and until the
             whole backlog (the windows of long texts too) is 0: events/s and vectors
             per event.

    .venv/bin/python bench/search.py [--sizes 10000,100000,1000000] [--parts search,disk,rss,trigram,drain]
                                     [--reps 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from corpus import GENERATOR_VERSION, PROJECTS, Corpus, build_database, schema_key, template_vectors
from harness import isolated_daemon, markdown_table, summary

import memd.services.embed  # first of memd: fastembed/onnxruntime before usearch (the other order segfaults)
from memd.config import EmbeddingConfig, RetrievalConfig
from memd.protocol import Ingest, Ingested, Search, SearchResults
from memd.query import compile_query
from memd.services.indexer import Indexer
from memd.services.search import Retriever, lexical_lanes
from memd.store import lanes as L
from memd.store import open_store
from memd.store.lanes import Filters, Frequencies
from memd_wire.paths import Paths

CACHE = "/tmp/memd-bench-corpus"
KEYWORD = ["keyword", "trigram", "substring"]
TARGET_P50 = {100_000: 8.0, 1_000_000: 25.0}
TARGET_RSS_MB = 450
TARGET_DRAIN = 90.0
SCOPED = PROJECTS[0][0]


def queries(corpus: Corpus) -> list[tuple[str, str]]:
    """~55 (class, query) pairs: identifiers, common words, phrases, questions, Korean, hostile input."""
    p = corpus.projects[0]
    rare = [p.functions.items[r] for r in (40, 150, 400, 900, 1600)] + [p.classes.items[r] for r in (30, 200)]
    out = [("rare identifier", q) for q in rare]
    out += [("rare identifier", "no_such_identifier_xyz")]
    out += [("path", p.files.items[r]) for r in (0, 20, 120)]
    out += [("common word", q) for q in ("error", "test", "the", "file", "fix", "session", "failed", "passed", "a the")]
    out += [
        ("phrase", q)
        for q in (
            '"test session starts"',
            "short test summary info",
            "Successfully installed",
            "On branch",
            "Exit code 1",
            "not assignable to parameter",
        )
    ]
    out += [
        ("natural language", q)
        for q in (
            "why does the search return None when the cache is empty",
            "how did we fix the flaky pytest failure in the writer",
            "what was decided about the embedding model",
            "which tests failed after the schema migration",
            "commit the change and push to main",
            "slow query in the invoice export",
            "npm install found vulnerabilities",
            "KeyError traceback in the session handler",
            "refactor the config loader to use pydantic",
            "timeout when the daemon socket is closed",
        )
    ]
    out += [("korean 2-char", q) for q in ("검색", "서버", "캐시", "세션", "빌드")]
    out += [
        ("korean 3+", q)
        for q in ("마이그레이션", "데이터베이스", "타임아웃을", "검색 결과가 너무 느려요", "장바구니 화면을 고쳐줘")
    ]
    out += [
        ("hostile", q)
        for q in (
            '"',
            "AND OR NOT",
            "*",
            "'; DROP TABLE events; --",
            "NEAR(a b) title:foo {x}:y",
            "x" * 2000,
            "🙂 ✨ 🚀",
            "((((",
            "%_%\\",
        )
    ]
    return out


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cache_dir(n: int, seed: int) -> str:
    return os.path.join(CACHE, f"v{GENERATOR_VERSION}-schema{schema_key()}-seed{seed}-n{n}")


def ensure_database(n: int, seed: int) -> tuple[str, float | None]:
    """The cached database of ``n`` events (built if missing); build seconds if it was built now."""
    directory = cache_dir(n, seed)
    path = os.path.join(directory, "memd.sqlite3")
    if os.path.exists(path):
        return path, None
    corpus = Corpus(seed)
    models = os.path.join(CACHE, "models")
    templates = template_vectors(corpus, CACHE, models, log)
    version = memd.services.embed.Embedder(EmbeddingConfig(), models).version
    started = time.perf_counter()
    build_database(path + ".partial", n, seed=seed, templates=templates, embedding_version=version, log=log)
    os.replace(path + ".partial", path)
    return path, time.perf_counter() - started


# --- search ---------------------------------------------------------------------------------


def timed(samples: list[float], started: float) -> None:
    samples.append((time.perf_counter() - started) * 1000)


async def measure(n: int, path: str, reps: int, seed: int, keyword_only: bool = False) -> dict[str, object]:
    directory = os.path.dirname(path)
    index_dir = os.path.join(directory, "vectors")
    if n <= 100_000:
        shutil.rmtree(index_dir, ignore_errors=True)  # time the rebuild from stored vectors
    had_index = os.path.isdir(index_dir) and bool(os.listdir(index_dir))
    qs = queries(Corpus(seed))
    result: dict[str, object] = {"n": n}
    async with open_store(path) as store, anyio.create_task_group() as tg:
        tg.start_soon(store.writer.run)
        indexer: Indexer | None = Indexer(EmbeddingConfig(), path, directory, store.writer)
        started = time.perf_counter()
        if keyword_only:
            indexer, had_index = None, False
        else:
            tg.start_soon(indexer.run)
        indexing_at = None
        while indexer is not None and indexer.state != "ready":
            if indexer.state == "indexing" and indexing_at is None:
                indexing_at = time.perf_counter()
            if indexer.state == "unavailable":
                raise RuntimeError(indexer.reason)
            await anyio.sleep(0.005)
        ready = time.perf_counter()
        result["model_load_s"] = (indexing_at or ready) - started
        result["index_open_s"] = ready - (indexing_at or ready)
        result["index_outcome"] = "none (keyword only)" if indexer is None else "loaded" if had_index else "rebuilt"
        result["index_vectors"] = len(indexer.index or ()) if indexer is not None else 0
        retriever = Retriever(store.readers, indexer, RetrievalConfig())
        runs = {
            "hybrid, project": dict(project=SCOPED),
            "hybrid, all": dict(all_projects=True),
            "keyword, project": dict(project=SCOPED, lanes=KEYWORD),
            "keyword, all": dict(all_projects=True, lanes=KEYWORD),
        }
        if indexer is None:
            runs = {name: kw for name, kw in runs.items() if kw.get("lanes")}
        samples: dict[str, list[float]] = {name: [] for name in runs}
        by_class: dict[tuple[str, str], list[float]] = {}
        for _, q in qs:  # warm-up: page cache, statement cache
            await retriever.search(Search(query=q, all_projects=True, lanes=[] if indexer else KEYWORD))
        for _ in range(reps):
            for name, kw in runs.items():
                for klass, q in qs:
                    t0 = time.perf_counter()
                    reply = await retriever.search(Search(query=q, **kw))
                    timed(samples[name], t0)
                    by_class.setdefault((name, klass), []).append(samples[name][-1])
                    assert not kw.get("lanes") or reply.mode != "hybrid"
        result["latency"] = {name: summary(values) for name, values in samples.items()}
        result["by_class"] = {key: statistics.median(values) for key, values in by_class.items()}
        result["steps"] = await steps(store, indexer, qs, reps)
        store.writer.close()
        tg.cancel_scope.cancel()
    return result


async def steps(store, indexer: Indexer | None, qs: list[tuple[str, str]], reps: int) -> dict[str, dict[str, float]]:
    """Median ms of each step of a search, run one by one (all projects, and the first project)."""
    conn = sqlite3.connect(store.path)
    (project_id,) = conn.execute("SELECT id FROM projects WHERE root = ?", (SCOPED,)).fetchone()
    out: dict[str, dict[str, float]] = {}
    frequencies = Frequencies()  # as the daemon's Retriever keeps it: remembered across searches
    for scope, filters in (("all", Filters()), ("project", Filters(project_id=project_id))):
        times: dict[str, list[float]] = {}
        for _ in range(reps):
            for _, q in qs:
                query = compile_query(q)
                if not query.groups and not query.cjk:
                    continue
                for lane in ("keyword", "trigram", "substring"):
                    t0 = time.perf_counter()
                    lexical_lanes(conn, query, filters, 20, frozenset({lane}), frequencies)
                    timed(times.setdefault(f"{lane} lane (SQL)", []), t0)
                if indexer is None or indexer.embedder is None or indexer.index is None:
                    continue
                t0 = time.perf_counter()
                vector = indexer.embedder.embed_query(q)
                timed(times.setdefault("embed query", []), t0)
                t0 = time.perf_counter()
                count = 20 if scope == "all" else 80
                neighbors = indexer.index.search(vector, count)
                timed(times.setdefault("usearch search", []), t0)
                close = [(n.key, n.similarity) for n in neighbors if n.similarity >= 0.2]
                t0 = time.perf_counter()
                found = L.vector_events(conn, close, filters, 30)
                timed(times.setdefault("vector keys -> events (SQL)", []), t0)
                ids = [event_id for event_id, _ in found]
                ids += L.keyword(conn, query, filters, 30)
                t0 = time.perf_counter()
                L.docs(conn, ids[:30])
                timed(times.setdefault("docs (SQL)", []), t0)
        out[scope] = {name: statistics.median(values) for name, values in times.items()}
        out[scope + " p95"] = {name: summary(values)["p95"] for name, values in times.items()}
    conn.close()
    return out


# --- disk -------------------------------------------------------------------------------------


def disk(n: int, path: str) -> dict[str, object]:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    groups: dict[str, int] = {}
    for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
        group = (
            "events_fts*"
            if name.startswith("events_fts")
            else "events_cjk*"
            if name.startswith("events_cjk")
            else "vectors"
            if name.startswith(("vectors", "sqlite_autoindex_vectors"))
            else "events (+ indexes)"
            if name.startswith(("events", "sqlite_autoindex_events"))
            else "vector_outbox"
            if name.startswith("vector_outbox")
            else "other"
        )
        groups[group] = groups.get(group, 0) + size
    (total,) = conn.execute("SELECT count(*) FROM events").fetchone()
    (cjk,) = conn.execute("SELECT count(*) FROM events_cjk").fetchone()
    (vectors,) = conn.execute("SELECT count(*) FROM vectors").fetchone()
    (text,) = conn.execute(
        "SELECT sum(length(CAST(title AS BLOB)) + length(CAST(text AS BLOB))) FROM events"
    ).fetchone()
    conn.close()
    index_dir = os.path.join(os.path.dirname(path), "vectors")
    usearch = sum(f.stat().st_size for f in Path(index_dir).glob("*.usearch")) if os.path.isdir(index_dir) else 0
    return {
        "n": n,
        "rows": total,
        "cjk_rows": cjk,
        "vectors": vectors,
        "db": os.path.getsize(path),
        "usearch": usearch,
        "groups": groups,
        "text_bytes": text,
    }


# --- daemon RSS -------------------------------------------------------------------------------


def copy_corpus(path: str) -> Callable[[Paths], None]:
    """A seed for ``isolated_daemon``: a copy of the cached database ``path`` and its vector index."""

    def copy_store(paths: Paths) -> None:
        os.makedirs(paths.data_dir, mode=0o700)
        shutil.copyfile(path, paths.database)
        source_index = os.path.join(os.path.dirname(path), "vectors")
        if os.path.isdir(source_index):
            shutil.copytree(source_index, os.path.join(paths.data_dir, "vectors"))

    return copy_store


def rss(path: str, seed: int) -> dict[str, object]:
    with isolated_daemon(seed=copy_corpus(path)) as instance:
        started = time.perf_counter()
        while (status := instance.status()).embedding is None or status.embedding.state != "ready":
            if instance.proc.poll() is not None or time.perf_counter() - started > 600:
                raise RuntimeError(f"the daemon did not become ready:\n{instance.log_tail()}")
            time.sleep(0.1)
        ready_s = time.perf_counter() - started
        before = _proc_status(instance.proc.pid)
        times = []
        with instance.client() as client:
            for _ in range(3):
                for _, q in queries(Corpus(seed)):
                    t0 = time.perf_counter()
                    client.call(Search(query=q, project=SCOPED), SearchResults)
                    timed(times, t0)
        after = _proc_status(instance.proc.pid)
        return {"ready_s": ready_s, "idle": before, "after": after, "rtt": summary(times), "status": status}


def _proc_status(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) // 1024  # MB
    return fields


# --- trigram cost -----------------------------------------------------------------------------


def trigram_cost(n: int, seed: int) -> list[dict[str, object]]:
    rows = []
    for cjk in (False, True):
        path = os.path.join(CACHE, f"trigram-{cjk}-{n}.sqlite3")
        stats = build_database(path, n, seed=seed, cjk=cjk, log=lambda _: None)
        conn = sqlite3.connect(path)
        (cjk_pages,) = conn.execute(
            "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'events_cjk%'"
        ).fetchone()
        (fts_pages,) = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'events_fts%'").fetchone()
        (cjk_rows,) = conn.execute("SELECT count(*) FROM events_cjk").fetchone()
        conn.close()
        rows.append(
            {
                "cjk": cjk,
                "insert_s": stats.insert_seconds,
                "db": os.path.getsize(path),
                "cjk_bytes": cjk_pages,
                "fts_bytes": fts_pages,
                "cjk_rows": cjk_rows,
            }
        )
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
    return rows


# --- drain ------------------------------------------------------------------------------------


def drain(events: int, seed: int) -> dict[str, object]:
    corpus = Corpus(seed + 1000)  # other sessions than the cached databases
    items = list(corpus.stream(events))
    with isolated_daemon() as instance:
        started = time.perf_counter()
        while (status := instance.status()).embedding is None or status.embedding.state != "ready":
            if time.perf_counter() - started > 120:
                raise RuntimeError(f"model not ready: {status.embedding}")
            time.sleep(0.1)
        ready_s = time.perf_counter() - started
        t0 = time.perf_counter()
        with instance.client() as client:
            for item in items:
                client.call(Ingest(event=item.hook, sent_at_ns=time.time_ns(), payload=item.payload), Ingested)
        ingested_s = time.perf_counter() - t0
        searchable_s = None
        while True:
            status = instance.status()
            assert status.embedding is not None
            if searchable_s is None and status.embedding.unembedded == 0:
                searchable_s = time.perf_counter() - t0  # every event has its head vector
            if status.embedding.backlog == 0:
                break
            if time.perf_counter() - t0 > 1800:
                raise RuntimeError("the backlog did not drain in 30 minutes")
            time.sleep(0.2)
        drained_s = time.perf_counter() - t0
        conn = sqlite3.connect(f"file:{instance.paths.database}?mode=ro", uri=True)
        (total,) = conn.execute("SELECT count(*) FROM events").fetchone()
        (vectors,) = conn.execute("SELECT count(*) FROM vectors").fetchone()
        conn.close()
        return {
            "events": total,
            "hook_events": status.events,
            "vectors": vectors,
            "ingest_s": ingested_s,
            "drain_s": drained_s,
            "searchable_s": searchable_s,
            "model_ready_s": ready_s,
            "failed": status.embedding.failed,
        }


# --- main -------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="corpus sizes for the search part")
    parser.add_argument("--parts", default="search,disk,rss,trigram,drain")
    parser.add_argument("--reps", type=int, default=5, help="searches of each query per configuration")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--drain-events", type=int, default=1000)
    parser.add_argument("--keyword-only", action="store_true", help="search part without the vector index")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    parts = set(args.parts.split(","))
    built: dict[int, float | None] = {}
    paths: dict[int, str] = {}
    for n in sizes if parts & {"search", "disk"} else []:
        log(f"database of {n} events")
        paths[n], built[n] = ensure_database(n, args.seed)
    print(f"corpus generator v{GENERATOR_VERSION}, seed {args.seed}; {len(queries(Corpus(args.seed)))} queries\n")

    if "search" in parts:
        results = []
        for n in sizes:
            log(f"searching {n}")
            results.append(anyio.run(measure, n, paths[n], args.reps, args.seed, args.keyword_only))
        rows = []
        for r in results:
            for name, lat in r["latency"].items():
                rows.append([f"{r['n']:,}", name, lat["p50"], lat["p95"], lat["p99"]])
        print(f"search latency, in-process Retriever.search, limit 10, ms ({args.reps} reps x each query)\n")
        print(markdown_table(["events", "search", "p50", "p95", "p99"], rows))
        print()
        print(
            markdown_table(
                ["events", "index at start", "vectors", "model load s", "index open/rebuild s", "DB build s"],
                [
                    [
                        f"{r['n']:,}",
                        r["index_outcome"],
                        r["index_vectors"],
                        r["model_load_s"],
                        r["index_open_s"],
                        "cached" if built.get(r["n"]) is None else round(built[r["n"]]),
                    ]
                    for r in results
                ],
            )
        )
        for r in results:
            print(f"\nN = {r['n']:,}: median ms by query class\n")
            classes = sorted({k for _, k in r["by_class"]}, key=lambda k: list(dict(queries(Corpus(1)))).index(k))
            names = list(r["latency"])
            print(
                markdown_table(["class", *names], [[k, *[r["by_class"][(name, k)] for name in names]] for k in classes])
            )
            steps_ = r["steps"]
            print(f"\nN = {r['n']:,}: each step alone, median (p95) ms\n")
            print(
                markdown_table(
                    ["step", "all projects", "one project"],
                    [
                        [
                            name,
                            f"{steps_['all'][name]:.3f} ({steps_['all p95'][name]:.3f})",
                            f"{steps_['project'][name]:.3f} ({steps_['project p95'][name]:.3f})",
                        ]
                        for name in steps_["all"]
                    ],
                )
            )
        verdicts = []
        for r in results:
            target = TARGET_P50.get(r["n"])
            if target and "hybrid, all" in r["latency"]:
                p50 = r["latency"]["hybrid, project"]["p50"]
                p50_all = r["latency"]["hybrid, all"]["p50"]
                ok = "met" if max(p50, p50_all) <= target else "NOT met"
                verdicts.append(f"N={r['n']:,}: hybrid p50 {p50:.2f} / {p50_all:.2f} ms (target <= {target}): {ok}")
        print("\n" + "\n".join(verdicts))

    if "disk" in parts:
        print("\ndisk, after wal_checkpoint(TRUNCATE)\n")
        rows = []
        for n in sizes:
            d = disk(n, paths[n])
            g = d["groups"]
            rows.append(
                [
                    f"{n:,}",
                    d["rows"],
                    d["vectors"],
                    d["db"] // d["rows"],
                    g.get("events (+ indexes)", 0) // d["rows"],
                    g.get("events_fts*", 0) // d["rows"],
                    g.get("events_cjk*", 0) // d["rows"],
                    g.get("vectors", 0) // d["rows"],
                    g.get("vector_outbox", 0) // d["rows"],
                    d["usearch"] // d["rows"] if d["usearch"] else "-",
                    d["text_bytes"] // d["rows"],
                    d["cjk_rows"],
                ]
            )
        print(
            markdown_table(
                [
                    "events",
                    "rows",
                    "vectors",
                    "DB B/event",
                    "events+idx",
                    "fts",
                    "cjk",
                    "vectors",
                    "outbox",
                    "usearch B/event",
                    "title+text B/event",
                    "CJK rows",
                ],
                rows,
            )
        )

    if "rss" in parts:
        n = 100_000
        log("daemon RSS at 100k")
        path, _ = ensure_database(n, args.seed)
        r = rss(path, args.seed)
        print(f"\ndaemon at {n:,} events: ready {r['ready_s']:.1f} s after start (model + index load)\n")
        print(
            markdown_table(
                ["when", "VmRSS MB", "VmHWM MB", "RssAnon MB", "RssFile MB"],
                [
                    ["ready, idle", *[r["idle"].get(k) for k in ("VmRSS", "VmHWM", "RssAnon", "RssFile")]],
                    ["after searches", *[r["after"].get(k) for k in ("VmRSS", "VmHWM", "RssAnon", "RssFile")]],
                ],
            )
        )
        verdict = "met" if r["after"]["VmRSS"] <= TARGET_RSS_MB else "NOT met"
        print(f"\nsearch over the socket: client RTT p50 {r['rtt']['p50']:.2f} ms, p95 {r['rtt']['p95']:.2f} ms")
        print(f"RSS {r['after']['VmRSS']} MB (target <= {TARGET_RSS_MB} MB): {verdict}")

    if "trigram" in parts:
        n = 100_000
        log("trigram cost at 100k (two builds)")
        rows = trigram_cost(n, args.seed)
        print(f"\ntrigram index cost, {n:,} events, no vectors\n")
        print(
            markdown_table(
                [
                    "events_cjk trigger",
                    "insert s (write_batch)",
                    "DB bytes",
                    "events_cjk bytes",
                    "events_fts bytes",
                    "CJK rows",
                ],
                [[r["cjk"], r["insert_s"], r["db"], r["cjk_bytes"], r["fts_bytes"], r["cjk_rows"]] for r in rows],
            )
        )

    if "drain" in parts:
        log("embedding drain")
        d = drain(args.drain_events, args.seed)
        first = d["events"] / d["searchable_s"]
        rate = d["events"] / d["drain_s"]
        print(f"\nembedding backlog drain: {args.drain_events} corpus hook events over the socket, fresh daemon\n")
        headers = ["events stored", "vectors", "vectors/event", "ingest s", "to head vectors s", "to backlog 0 s"]
        headers += ["events/s (heads)", "events/s (all)", "failed"]
        row = [d["events"], d["vectors"], d["vectors"] / d["events"], d["ingest_s"], d["searchable_s"], d["drain_s"]]
        print(markdown_table(headers, [[*row, first, rate, d["failed"]]]))
        verdict = "met" if first >= TARGET_DRAIN else "NOT met"
        print(f"\n{first:.1f} events/s to searchable by meaning (target >= {TARGET_DRAIN}): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
