"""Team memory on the sync server: the vectors a push gives team rows, and searching the team
rows where they are (``memctl search --team``, MCP ``mem_search`` with ``team``).

A team's shared memory can be larger than anyone wants on every laptop; the server has all of
it.  A search there matches words (PostgreSQL's full text) and, where the server has pgvector
and this machine's model is the one its vectors are of (``remote.DIM``), meaning: the two
rankings fused by reciprocal rank, as the local lanes are.  Row-level security picks the rows
(the teams this role is a member of); what comes back is filtered again by this machine's secret
rules before anyone sees it.  A hit this machine holds too carries its local citation id (the
same id, made from the same key) and opens with ``memctl show``.

One connection, opened on the first search and kept, one query at a time on it; a search
never waits on the sync loop's connection (which sits in LISTEN) nor delays it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

import anyio
import msgspec
import structlog

from ..capture.privacy import Privacy
from ..capture.project import project_key, project_root
from ..cite import LENGTH, key_citation
from ..config import EmbeddingConfig, PrivacyConfig, SyncConfig
from ..protocol import ExportedEvent, TeamHit, TeamResults, TeamSearch
from ..store import Store, remote, remote_search
from ..store.citations import cites_of_keys
from .errors import problem
from .indexer import Indexer

if TYPE_CHECKING:
    import numpy as np
    from psycopg import AsyncConnection

__all__ = ["Team"]

log = structlog.get_logger("memd.team")

TEAM_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"
"""The model of the server's vectors (``remote.DIM`` dimensions)."""
RRF_K: Final = 60
"""Reciprocal-rank fusion's constant (the usual one): a hit's score is the sum of 1/(k + rank)."""
SNIPPET: Final = 300
MODEL_WAIT: Final = 60.0
"""Seconds a push of team rows waits for the model at start (it loads in about one)."""
WORDS_ADVICE: Final = f"a superuser runs `{remote.WORDS_INDEX}` in its database"


class Team:
    """Team search on the server, and the vectors of what this machine shares."""

    def __init__(
        self, config: SyncConfig, embedding: EmbeddingConfig, privacy: PrivacyConfig, store: Store,
        indexer: Indexer | None,
    ) -> None:  # fmt: skip
        self.url = os.environ.get("MEMD_SYNC_URL") or config.url
        self.same_model = embedding.model == TEAM_MODEL
        self.store = store
        self.indexer = indexer
        self.privacy = Privacy(msgspec.structs.replace(privacy, secrets=True)).secrets_only()
        self._conn: AsyncConnection | None = None
        self._one_at_a_time = anyio.Lock()
        self._embedding = anyio.CapacityLimiter(1)

    async def vectors(self, rows: list[remote.Outgoing], server: remote.Server) -> list[remote.Outgoing]:
        """``rows`` with the vectors of their team puts, where the server keeps them and this
        machine's model is theirs (else as they are: words still find them)."""
        wanted = [i for i, row in enumerate(rows) if row.words is not None]
        if not (wanted and server.vectors):
            return rows
        try:
            made = await self._embed([f"{rows[i].words[0]}\n{rows[i].words[1]}" for i in wanted])  # type: ignore[index]
        except Exception:  # the push goes on without them (words still find the rows); cancellation passes
            log.exception("team_vectors_failed", rows=len(wanted))
            return rows
        if made is None:
            return rows
        rows = list(rows)
        for i, vector in zip(wanted, made, strict=True):
            rows[i] = rows[i]._replace(vector=remote.vector_text(vector.tolist()))
        return rows

    async def search(self, request: TeamSearch) -> TeamResults:
        reply = TeamResults(query=request.query, results=[], mode="none")
        if not self.url:
            reply.notice = "sync is off: team search runs on the sync server ([sync] url, `memctl sync setup`)"
            return reply
        if not request.query.strip():
            reply.notice = "no words to search for"
            return reply
        if request.cwd and not request.all_projects:
            reply.scope = await anyio.to_thread.run_sync(lambda: project_key(project_root(request.cwd or "")))
        pool = max(request.limit * 3, 30)
        vector = await self._embed([request.query], query=True)
        try:
            async with self._one_at_a_time:
                conn = await self._connection()
                server = await remote.server(conn)
                if server is None or not server.words:
                    reply.notice = "the server's memd schema has no team search yet: its owner runs `memctl sync setup`"
                    return reply
                by_words = await remote_search.by_words(conn, request.query, pool, request.team, reply.scope)
                by_meaning = []
                if server.vectors and vector is not None:
                    near = remote.vector_text(vector.tolist())
                    by_meaning = await remote_search.by_meaning(conn, near, pool, request.team, reply.scope)
        except Exception as exc:  # a server away is said, not raised; cancellation is not caught
            await self._drop()
            log.warning("team_search_failed", error=problem(exc))
            reply.notice = f"the team server could not be searched: {problem(exc)}"
            return reply
        reply.mode = "hybrid" if server.vectors and vector is not None else "keyword"
        notices = [self._why_words_only(server)] if reply.mode == "keyword" else []
        if not server.words_indexed:
            notices.append(
                f"the server reads every team row for words (slower as the team's memory grows): {WORDS_ADVICE}"
            )
        reply.notice = "; ".join(notices)
        reply.results = await self._hits(by_words, by_meaning, request.limit)
        return reply

    async def _hits(
        self, by_words: list[remote_search.Found], by_meaning: list[remote_search.Found], limit: int
    ) -> list[TeamHit]:
        """The two rankings fused by reciprocal rank, decoded, filtered, with local ids."""
        fused: dict[str, tuple[float, remote_search.Found, float | None]] = {}
        for ranking, meaning in ((by_words, False), (by_meaning, True)):
            for rank, found in enumerate(ranking, 1):
                score, first, similarity = fused.get(found.event_key, (0.0, found, None))
                fused[found.event_key] = (score + 1 / (RRF_K + rank), first, found.score if meaning else similarity)
        best = sorted(fused.values(), key=lambda item: -item[0])[:limit]
        here = await self.store.readers.run(cites_of_keys, [found.event_key for _, found, _ in best])
        decoder = msgspec.json.Decoder(ExportedEvent)
        hits = []
        for score, found, similarity in best:
            try:
                event = decoder.decode(found.body)
            except msgspec.DecodeError:  # not memd's: another client wrote the table
                continue
            title, _ = self.privacy.text(event.title)
            head = event.text[: SNIPPET * 4]
            if len(head) < len(event.text):  # never a token cut in two: the filter must see it whole
                parts = head.rsplit(None, 1)
                head = parts[0] if len(parts) == 2 else ""
            text, _ = self.privacy.text(head)
            hits.append(TeamHit(
                cite=here.get(found.event_key) or key_citation(found.event_key)[:LENGTH], kind=event.kind,
                title=title, snippet=" ".join(text.split())[:SNIPPET], score=round(score, 6),
                similarity=None if similarity is None else round(similarity, 4), team=found.team,
                shared_by=found.owner, project=event.project, session_id=event.session_id,
                client_ts=event.client_ts, here=found.event_key in here,
            ))  # fmt: skip
        return hits

    def _why_words_only(self, server: remote.Server) -> str:
        if not server.vectors:
            return (
                "words only: the server keeps no vectors (no pgvector, or not set up: `memctl sync setup` says which)"
            )
        if not self.same_model:
            return f"words only: the server's vectors are {TEAM_MODEL}'s, this machine uses another model"
        return "words only: the embedding model is not ready yet"

    async def _embed(self, texts: list[str], *, query: bool = False) -> np.ndarray | None:
        """Vectors of ``texts`` by the server's model, if this machine's is it; a push waits for
        the model to load (a row pushed without its vector never gets one), a search does not."""
        if self.indexer is None or not self.same_model:
            return None
        with anyio.move_on_after(0 if query else MODEL_WAIT):
            while self.indexer.state in ("loading", "indexing"):
                await anyio.sleep(0.1)
        embedder = self.indexer.embedder if self.indexer.ready else None
        if embedder is None or embedder.dim != remote.DIM:
            return None
        if query:
            return await anyio.to_thread.run_sync(embedder.embed_query, texts[0], limiter=self._embedding)
        return await anyio.to_thread.run_sync(embedder.embed, texts, limiter=self._embedding)

    async def _connection(self) -> AsyncConnection:
        if self._conn is None or self._conn.closed:
            import psycopg

            self._conn = await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=10, options="-c statement_timeout=15s"
            )
        return self._conn

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with anyio.CancelScope(shield=True):
                await conn.close()
