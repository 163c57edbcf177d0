"""Searching the team's memory on the sync server (``memctl search --team``): its team rows by
their words and, where the server keeps vectors, by meaning (``memd.store.remote``'s schema).

Row-level security decides what a role reads, as for a pull: the team rows of the teams it is
a member of, never a personal row.  ``team`` narrows that to one team, ``project_key`` to one
project; forgotten memories are gone from the server (a forget deletes their rows).

Words are matched as ``websearch_to_tsquery`` reads a query: every word, stemmed (English),
``"quoted phrases"`` and ``-excluded`` words as a web search engine takes them.  Ranked by
``ts_rank_cd`` over the title (weight A) and text, among the newest ``POOL`` matches (where
the server has ``remote.WORDS_INDEX``, only matching rows are read; see there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["POOL", "Found", "by_meaning", "by_words"]

POOL: Final = 2000
"""Matching rows ranked per words query, newest first: past it, older matches are not ranked."""
_COLUMNS: Final = "event_key, owner::text, team::text, project_key, body"
_TEAM_ROWS: Final = "scope = 'team' AND op = 'put' AND (%(team)s::text IS NULL OR team = %(team)s)" \
    " AND (%(project)s::text IS NULL OR project_key = %(project)s)"  # fmt: skip


_WIDE: Final = "SET LOCAL hnsw.ef_search = 100"
_WIDER: Final = "SET LOCAL hnsw.ef_search = 400"


class Found(NamedTuple):
    event_key: str
    owner: str
    """The role that shared it."""
    team: str
    project_key: str
    body: bytes
    """The event as ``ExportedEvent`` JSON."""
    score: float
    """``ts_rank_cd`` (words) or cosine similarity (meaning)."""


async def by_words(
    conn: AsyncConnection, query: str, limit: int, team: str | None, project_key: str | None
) -> list[Found]:
    """The team rows matching ``query``'s words, best first: ranked among the newest ``POOL``
    rows that match, so that a query of words in most rows costs what a rare one does."""
    cur = await conn.execute(
        "WITH recent AS ("
        " SELECT seq, ts_rank_cd(words, websearch_to_tsquery('english', %(query)s)) AS rank FROM memd.log"
        f" WHERE words @@ websearch_to_tsquery('english', %(query)s) AND {_TEAM_ROWS}"
        " ORDER BY seq DESC LIMIT %(pool)s),"
        " best AS (SELECT seq, rank FROM recent ORDER BY rank DESC, seq DESC LIMIT %(limit)s)"
        f" SELECT {_COLUMNS}, best.rank FROM best JOIN memd.log USING (seq) ORDER BY best.rank DESC, seq DESC",
        {"query": query, "team": team, "project": project_key, "pool": POOL, "limit": limit},
    )
    return _found(await cur.fetchall())


async def by_meaning(
    conn: AsyncConnection, vector: str, limit: int, team: str | None, project_key: str | None
) -> list[Found]:
    """The team rows nearest ``vector`` (a unit vector of ``remote.DIM``, as ``remote.vector_text``
    spells it), nearest first; an approximate search over the server's HNSW index, as the local
    one is over usearch's."""
    async with conn.transaction():
        # The index returns its ef_search nearest before any filter (row-level security's: rows
        # of teams this role is not in; ours: one team, one project): look at more of them than
        # pgvector's default 40, so that ``limit`` rows are left after it.
        await conn.execute(
            "SET LOCAL hnsw.ef_search = 400" if team or project_key else "SET LOCAL hnsw.ef_search = 100"
        )
        cur = await conn.execute(
            f"SELECT {_COLUMNS}, 1 - (embedding <=> %(vector)s::vector) AS similarity FROM memd.log"
            f" WHERE embedding IS NOT NULL AND {_TEAM_ROWS} ORDER BY embedding <=> %(vector)s::vector LIMIT %(limit)s",
            {"vector": vector, "team": team, "project": project_key, "limit": limit},
        )
        rows = await cur.fetchall()
    return sorted(_found(rows), key=lambda found: -found.score)


def _found(rows: Sequence[tuple[Any, ...]]) -> list[Found]:
    return [Found(r[0], r[1], r[2], r[3], bytes(r[4]), float(r[5])) for r in rows if r[4] is not None]
