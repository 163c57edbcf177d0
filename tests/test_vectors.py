"""The vector side: outbox states and retries, the embedding worker, the index through crashes.

The outbox functions are SQL on a real database, driven with explicit clocks.  The
worker runs in-process with an embedder that fails on purpose (the one failure that
cannot be produced otherwise).  Crashes and broken index files use the real daemon.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import anyio
import numpy as np
import pytest
from conftest import Instance

from memd.config import EmbeddingConfig
from memd.retrieve.windows import event_windows
from memd.services.embed import LEGACY_DEFAULT_VERSION
from memd.services.indexer import Indexer
from memd.services.vectors import SCRATCH_KEYS, VectorIndex
from memd.store import open_store, outbox
from memd.store.schema import migrate

# --- the outbox, by the clock ----------------------------------------------------------


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "memd.sqlite3", isolation_level=None)
    migrate(conn)
    for n in range(1, 6):
        conn.execute(
            "INSERT INTO events (idem_key, kind, title, text, payload, importance, client_ts, received_at, size)"
            " VALUES (?, 'prompt', ?, ?, '{}', 2, 0, 0, 1)",
            (f"k{n}", f"title {n}", f"text {n}"),
        )
    return conn


def states(conn: sqlite3.Connection) -> dict[int, tuple[str, int]]:
    return {e: (s, a) for e, s, a in conn.execute("SELECT event_id, state, attempts FROM vector_outbox")}


def test_every_event_is_enqueued_in_its_own_transaction(conn: sqlite3.Connection) -> None:
    assert states(conn) == {n: ("pending", 0) for n in range(1, 6)}
    conn.execute("BEGIN")
    conn.execute(
        "INSERT INTO events (idem_key, kind, title, text, payload, importance, client_ts, received_at, size)"
        " VALUES ('k6', 'prompt', 't', 't', '{}', 2, 0, 0, 1)"
    )
    conn.execute("ROLLBACK")
    assert 6 not in states(conn)


def test_claims_are_atomic_and_newest_first(conn: sqlite3.Connection) -> None:
    first = outbox.claim(conn, 2, now=100.0)
    second = outbox.claim(conn, 10, now=100.0)
    assert {c.event_id for c in first} == {4, 5}
    assert {c.event_id for c in second} == {1, 2, 3}
    assert outbox.claim(conn, 10, now=100.0) == []
    assert {s for s, _ in states(conn).values()} == {"processing"}
    assert first[0].text.startswith("text ")


def test_retries_back_off_then_fail(conn: sqlite3.Connection) -> None:
    now = 1000.0
    delays = []
    for attempt in range(1, outbox.MAX_ATTEMPTS + 1):
        (claimed,) = [c for c in outbox.claim(conn, 10, now) if c.event_id == 3] or [None]
        assert claimed is not None, f"attempt {attempt} not due at {now}"
        for other in outbox.claim(conn, 10, now):  # keep the others out of the way
            outbox.complete(conn, "", [(other, np.zeros((0, 4)), False)])
        failed = outbox.fail(conn, [claimed], "boom", now)
        state, attempts = states(conn)[3]
        assert attempts == attempt
        if attempt < outbox.MAX_ATTEMPTS:
            assert (state, failed) == ("pending", 0)
            (due,) = conn.execute("SELECT due_at FROM vector_outbox WHERE event_id = 3").fetchone()
            delays.append(due - now)
            assert outbox.claim(conn, 10, now + delays[-1] - 0.5) == []  # not before it is due
            now += delays[-1]
        else:
            assert (state, failed) == ("failed", 1)
    assert delays == list(outbox.RETRY_DELAYS) == [1.0, 5.0, 30.0]
    assert conn.execute("SELECT error FROM vector_outbox WHERE event_id = 3").fetchone() == ("boom",)
    assert outbox.stats(conn, now).failed == 1
    outbox.requeue_all(conn)  # what memctl rebuild --vectors does
    assert states(conn)[3] == ("pending", 0)


def test_stuck_rows_return_to_pending(conn: sqlite3.Connection) -> None:
    old = outbox.claim(conn, 2, now=100.0)
    outbox.claim(conn, 10, now=500.0)
    assert outbox.recover(conn, claimed_before=500.0 - outbox.STUCK_AFTER) == len(old)
    assert {e for e, (s, _) in states(conn).items() if s == "pending"} == {c.event_id for c in old}
    assert outbox.complete(conn, "", [(old[0], np.ones((1, 4)), False)]) == ([], [])  # a late result is dropped


def test_complete_stores_the_head_then_the_windows_and_replaces_old_vectors(conn: sqlite3.Connection) -> None:
    outbox.set_version(conn, "m:4")
    (head,) = [c for c in outbox.claim(conn, 10, 1.0) if c.event_id == 2]
    assert head.stage == 0
    for other in outbox.claim(conn, 10, 1.0):
        assert other.event_id != 2
    added, removed = outbox.complete(conn, "m:4", [(head, np.eye(4)[:1], True)])
    assert len(added) == 1 and removed == [] and states(conn)[2] == ("pending", 0)
    (rest,) = outbox.claim(conn, 10, 1.5)
    assert (rest.event_id, rest.stage) == (2, 1)
    added1, _ = outbox.complete(conn, "m:4", [(rest, np.eye(4)[1:4], False)])
    assert len(added1) == 3 and states(conn)[2] == ("done", 1)
    assert conn.execute("SELECT chunk FROM vectors WHERE event_id = 2 ORDER BY chunk").fetchall() == [
        (0,),
        (1,),
        (2,),
        (3,),
    ]
    stored = outbox.decode(conn.execute("SELECT vector FROM vectors WHERE event_id = 2 AND chunk = 2").fetchone()[0])
    assert np.array_equal(stored, np.eye(4)[2])
    conn.execute("UPDATE vector_outbox SET state = 'pending', stage = 0 WHERE event_id = 2")  # e.g. a summary changed
    (again,) = [c for c in outbox.claim(conn, 10, 2.0) if c.event_id == 2]
    added2, removed2 = outbox.complete(conn, "m:4", [(again, np.eye(4)[:1], False)])
    assert sorted(removed2) == sorted(key for key, _ in added + added1) and len(added2) == 1
    assert outbox.complete(conn, "other:8", [(again, np.eye(4)[:1], False)]) == ([], [])  # another version: dropped


def test_a_new_embedding_version_requeues_everything(conn: sqlite3.Connection) -> None:
    assert outbox.set_version(conn, "a:4") is True
    claimed = outbox.claim(conn, 10, 1.0)
    outbox.complete(conn, "a:4", [(c, np.ones((1, 4)), False) for c in claimed])
    assert outbox.stats(conn, 2.0).backlog == 0 and outbox.extent(conn)[0] == 5
    assert outbox.set_version(conn, "a:4") is False
    assert outbox.set_version(conn, "b:8") is True
    assert outbox.extent(conn) == (0, 0) and outbox.stats(conn, 2.0).backlog == 5


def test_another_name_of_the_same_embedding_keeps_the_vectors(conn: sqlite3.Connection) -> None:
    outbox.set_version(conn, "m:4")
    outbox.complete(conn, "m:4", [(c, np.ones((1, 4)), False) for c in outbox.claim(conn, 10, 1.0)])
    assert outbox.set_version(conn, "m:4:8199be6f699a", same=("m:4",)) is True  # renamed, nothing requeued
    assert outbox.extent(conn)[0] == 5 and outbox.stats(conn, 2.0).backlog == 0
    assert conn.execute("SELECT version FROM embedding_version").fetchone() == ("m:4:8199be6f699a",)
    assert outbox.set_version(conn, "m:4:000000000000", same=("m:4",)) is True  # other weights: all again
    assert outbox.extent(conn) == (0, 0) and outbox.stats(conn, 2.0).backlog == 5


def test_deleting_an_event_deletes_its_vectors_and_outbox_row(conn: sqlite3.Connection) -> None:
    outbox.set_version(conn, "a:4")
    outbox.complete(conn, "a:4", [(c, np.ones((2, 4)), False) for c in outbox.claim(conn, 10, 1.0)])
    conn.execute("DELETE FROM events WHERE id = 3")
    assert conn.execute("SELECT count(*) FROM vectors WHERE event_id = 3").fetchone() == (0,)
    assert 3 not in states(conn)


def test_removed_vectors_leave_the_index_file(tmp_path: Path) -> None:
    """usearch frees a slot but keeps its bytes; a scrub overwrites every free slot, also
    those an earlier scrub filled and a save and load carried over, whatever order
    additions reuse them in."""
    index = VectorIndex(str(tmp_path / "vectors" / "v.usearch"), 32)
    vectors = np.random.default_rng(7).standard_normal((300, 32)).astype(np.float32)
    stored = {key: vectors[key - 1].astype(np.float16).tobytes() for key in range(1, 301)}
    index.add(range(1, 301), vectors)
    gone = [5, 6, 7, *range(100, 200)]
    index.remove([5, 6, 7, 9999])  # an absent key is no error
    index.scrub()
    index.remove(range(100, 180))
    index.scrub()
    index.save()
    assert index.load()
    index.remove(range(180, 200))
    index.save()
    assert stored[180] in Path(index.path).read_bytes()  # removed, not gone
    index.scrub()
    index.save()
    saved = Path(index.path).read_bytes()
    assert not [key for key in gone if stored[key] in saved]
    assert all(stored[key] in saved for key in stored.keys() - set(gone))
    assert len(index) == 300 - len(gone) and index.max_key() == 300
    assert index.search(vectors[0], 1)[0].key == 1
    # A search running beside a scrub never sees the filler's scratch keys (not SQLite rowids).
    index._index.add(SCRATCH_KEYS, vectors[0])
    assert [n.key for n in index.search(vectors[0], 2)] == [1]


# --- the worker, with an embedder that fails on purpose --------------------------------


class FailingEmbedder:
    """Deterministic 4-d vectors; any text containing 'poison' makes the call fail."""

    version = "fake:4"
    same_as = ()
    dim = 4

    def __init__(self) -> None:
        self.calls = 0

    def load(self) -> None:
        pass

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if any("poison" in t for t in texts):
            raise ValueError("cannot embed this")
        return np.array([[len(t) % 7 + 1, 1, 0, 0] for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def test_worker_retries_a_failing_event_without_failing_its_batch(tmp_path: Path) -> None:
    async def main() -> None:
        database = str(tmp_path / "memd.sqlite3")
        async with open_store(database) as store, anyio.create_task_group() as tg:
            tg.start_soon(store.writer.run)
            for text in ("fine one", "poison pill", "fine two", "fine three"):
                await store.writer.call(_insert_prompt, text)
            embedder = FailingEmbedder()
            indexer = Indexer(EmbeddingConfig(), database, str(tmp_path), store.writer, embedder=embedder)
            tg.start_soon(indexer.run)
            with anyio.fail_after(20):
                while not (indexer.ready and indexer.embedded == 3 and _attempts(database, "poison pill") >= 2):
                    await anyio.sleep(0.05)
            assert indexer.index is not None and len(indexer.index) == 3
            neighbours = await indexer.neighbors("fine one", 3)
            assert (
                neighbours is not None and len(neighbours[0]) == 3 and neighbours[1].shape == (4,)
            )  # the fake model's dimension
            tg.cancel_scope.cancel()
            store.writer.close()
        conn = sqlite3.connect(database)
        rows = dict(conn.execute("SELECT e.text, o.state FROM vector_outbox o JOIN events e ON e.id = o.event_id"))
        # A retry of the poison pill may be claimed at the instant of cancelling: "processing"
        # then, which the next start returns to pending (``outbox.recover``).
        assert rows.pop("poison pill") in ("pending", "processing")
        assert rows == {"fine one": "done", "fine two": "done", "fine three": "done"}
        (error,) = conn.execute(
            "SELECT o.error FROM vector_outbox o JOIN events e ON e.id = o.event_id WHERE e.text = 'poison pill'"
        ).fetchone()
        assert "cannot embed this" in error
        assert os.path.exists(indexer.index.path)  # saved on the way out

    anyio.run(main)


class BrokenEmbedder(FailingEmbedder):
    def load(self) -> None:
        raise RuntimeError("the runtime is broken")


def test_an_indexer_failure_never_takes_the_daemon_down(tmp_path: Path) -> None:
    async def main() -> None:
        database = str(tmp_path / "memd.sqlite3")
        async with open_store(database) as store, anyio.create_task_group() as tg:
            tg.start_soon(store.writer.run)
            indexer = Indexer(EmbeddingConfig(), database, str(tmp_path), store.writer, embedder=BrokenEmbedder())
            await indexer.run()  # returns instead of raising into the daemon's task group
            assert indexer.state == "unavailable" and "the runtime is broken" in indexer.reason
            assert await indexer.neighbors("anything", 3) is None
            store.writer.close()

    anyio.run(main)


def _insert_prompt(conn: sqlite3.Connection, text: str) -> None:
    conn.execute(
        "INSERT INTO events (idem_key, kind, title, text, payload, importance, client_ts, received_at, size)"
        " VALUES (?, 'prompt', ?, ?, '{}', 2, 0, 0, 1)",
        (text, text, text),
    )


def _attempts(database: str, text: str) -> int:
    conn = sqlite3.connect(database)
    try:
        row = conn.execute(
            "SELECT attempts FROM vector_outbox o JOIN events e ON e.id = o.event_id WHERE e.text = ?", (text,)
        ).fetchone()
        return row[0] if row else 0
    finally:
        conn.close()


# --- crashes and broken files, with the real daemon ------------------------------------

TOPICS = [
    "the parser rejects trailing commas in the config loader",
    "database migration adds an index on sessions by project",
    "the websocket client reconnects with exponential backoff",
    "pytest fixtures share one daemon per module to save model loads",
    "usearch index file is rebuilt from stored float16 vectors",
]


def long_text(n: int) -> str:
    return f"note {n}: " + " ".join(TOPICS[(n + i) % len(TOPICS)] for i in range(1 + n % 12))


def check_every_event_has_exactly_its_vectors(memd: Instance) -> None:
    events = memd.query("SELECT id, title, text, kind FROM events")
    chunks: dict[int, list[int]] = {}
    for event_id, chunk in memd.query("SELECT event_id, chunk FROM vectors ORDER BY event_id, chunk"):
        chunks.setdefault(event_id, []).append(chunk)
    for event_id, title, text, kind in events:
        expected = len(event_windows(title, text, kind))
        assert chunks.get(event_id, []) == list(range(expected)), f"event {event_id}"
    assert memd.query("SELECT DISTINCT state FROM vector_outbox") == [("done",)]
    embedding = memd.status().embedding
    assert embedding is not None and embedding.index_vectors == embedding.stored_vectors == sum(
        map(len, chunks.values())
    )


def log_events(memd: Instance, name: str) -> list[dict]:
    with open(memd.paths.log_file) as f:
        return [r for r in map(json.loads, f) if r.get("event") == name]


@pytest.fixture
def semantic(instance: Instance) -> Instance:
    instance.embedding = True
    instance.configure()
    return instance


def test_kill_during_embedding_then_every_event_has_exactly_its_vectors(semantic: Instance) -> None:
    memd = semantic
    memd.start()
    cwd = f"{memd.root}/project"
    for n in range(150):
        memd.remember(long_text(n), cwd)

    def some_embedded() -> bool:
        embedding = memd.status().embedding
        return embedding is not None and embedding.stored_vectors > 0

    memd.wait_for(some_embedded, timeout=60)
    assert memd.status().embedding.backlog > 0  # type: ignore[union-attr]
    memd.kill()
    memd.start()
    memd.wait_embedded()
    check_every_event_has_exactly_its_vectors(memd)
    assert memd.stop() == 0


def assert_same_memories(after: list[list[tuple[int, float]]], before: list[list[tuple[int, float]]]) -> None:
    """The same memories for each query, each as confident within 0.01.  Not the very same
    floats or order: a rebuilt HNSW graph (built on every core at once, so not the same graph
    twice) may reach a closer window of an event than the graph it replaces did."""
    assert [sorted(i for i, _ in hits) for hits in after] == [sorted(i for i, _ in hits) for hits in before]
    for got, wanted in zip(after, before, strict=True):
        confidence = dict(wanted)
        assert all(abs(c - confidence[i]) <= 0.01 for i, c in got), (got, wanted)


def test_a_missing_or_corrupt_index_is_rebuilt_with_the_same_results(semantic: Instance) -> None:
    memd = semantic
    memd.start()
    cwd = f"{memd.root}/project"
    for n in range(40):
        memd.remember(long_text(n), cwd)
    memd.wait_embedded()
    queries = ["websocket reconnect", "how are vectors restored after a crash", "config loader commas"]

    def results() -> list[list[tuple[int, float]]]:
        return [[(h.id, h.confidence) for h in memd.search(q, cwd=cwd).results] for q in queries]

    before = results()
    assert all(before)
    assert memd.stop() == 0
    (index_file,) = Path(memd.paths.data_dir, "vectors").glob("vectors-*.usearch")

    index_file.unlink()
    memd.start()
    memd.wait_embedded()
    assert_same_memories(results(), before)
    assert log_events(memd, "vector_index_rebuilt")[-1]["reason"] == "missing"
    assert memd.stop() == 0

    index_file.write_bytes(b"not an index" * 100)
    memd.start()
    memd.wait_embedded()
    assert_same_memories(results(), before)
    assert log_events(memd, "vector_index_rebuilt")[-1]["reason"] == "unreadable"
    check_every_event_has_exactly_its_vectors(memd)
    assert memd.stop() == 0

    opened = [r["outcome"] for r in log_events(memd, "vector_index_open")]
    assert opened == ["new", "rebuilt", "rebuilt"]
    memd.start()
    memd.wait_embedded()
    assert log_events(memd, "vector_index_open")[-1]["outcome"] == "current"
    assert memd.stop() == 0


def test_a_changed_embedding_version_reembeds_everything(semantic: Instance) -> None:
    memd = semantic
    memd.start()
    for n in range(10):
        memd.remember(long_text(n), f"{memd.root}/project")
    memd.wait_embedded()
    (old_top,) = memd.query("SELECT max(id) FROM vectors")[0]
    assert memd.stop() == 0
    conn = sqlite3.connect(memd.paths.database)
    conn.execute("UPDATE embedding_version SET version = 'some-other-model:768'")
    conn.commit()
    conn.close()
    memd.start()
    memd.wait_embedded()
    assert memd.query("SELECT min(id) FROM vectors")[0][0] > old_top  # all new vectors
    check_every_event_has_exactly_its_vectors(memd)
    assert memd.stop() == 0


def test_vectors_of_an_earlier_memd_with_the_same_weights_are_kept(semantic: Instance) -> None:
    """An earlier memd named the default embedding without its weights' hash; it verified the
    same weights, so an upgrade renames the version and keeps the vectors (no re-embedding)."""
    memd = semantic
    memd.start()
    cwd = f"{memd.root}/project"
    for n in range(10):
        memd.remember(long_text(n), cwd)
    memd.wait_embedded()
    vectors = memd.query("SELECT id FROM vectors ORDER BY id")
    before = [h.id for h in memd.search("websocket reconnect", cwd=cwd).results]
    assert memd.stop() == 0
    conn = sqlite3.connect(memd.paths.database)
    conn.execute("UPDATE embedding_version SET version = ?", (LEGACY_DEFAULT_VERSION,))
    conn.commit()
    conn.close()
    memd.start()
    memd.wait_embedded()
    assert memd.query("SELECT version FROM embedding_version") == [(f"{LEGACY_DEFAULT_VERSION}:8199be6f699a",)]
    assert memd.query("SELECT id FROM vectors ORDER BY id") == vectors  # the same rows: nothing embedded again
    assert [h.id for h in memd.search("websocket reconnect", cwd=cwd).results] == before
    check_every_event_has_exactly_its_vectors(memd)
    assert memd.stop() == 0
