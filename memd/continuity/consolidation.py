"""Consolidation: the working set's events grouped by topic, each group of 3 or more summed
up in one memory that cites them.  ``groups`` and ``consolidate`` are pure; ``run`` is one
pass over the database, on the writer's thread (``writer.call(consolidation.run, now)``):
the working sets' new events in, consolidated memories (kind ``consolidated``, searchable
and citable) out, in one transaction, the reads and writes ``store/consolidation.py``'s.

    1. each event's topics: its 5 most mentioned content words (paths and the name of its tool
       left out: a path's segments, ``tmp``, ``src``, say where, not what), and ``file:`` + each
       file
    2. one group per topic shared by 3+ events; groups overlapping by more than half
       (|A ∩ B| / min(|A|, |B|) > 0.5) merge, until none do
    3. per group: its topics (up to 5), up to 10 key points (each event's first sentence,
       with its citation id), its files; and a confidence
       0.4·min(n/10, 1) + 0.4·max(0, 1 - mean gap / 24 h) + 0.2·min(3 / topics, 1)

Only stored text goes in, already privacy-filtered, and nothing is added but the
structure: a consolidated memory can say nothing its sources did not.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import Final, NamedTuple

from ..capture.extract import topics
from ..retrieve.digest import LONG_FORM
from ..store import consolidation as table
from ..store.batch import atomically
from ..store.consolidation import Source
from ..store.events import insert_derived

__all__ = ["MIN_GROUP", "Consolidated", "consolidate", "groups", "run", "set_key"]

MIN_GROUP: Final = 3
TOPICS_PER_EVENT: Final = 5
KEY_POINTS: Final = 10
POINT_CHARS: Final = 100
_SENTENCE: Final = re.compile(r"(?<=[.!?\u3002])\s+|\n+")
_PATH: Final = re.compile(r"\S*[/\\]\S*")
"""A word with a slash in it: a path (``/tmp/bar/x.py``, ``src\\app``) or a URL."""


class Consolidated(NamedTuple):
    sources: tuple[int, ...]
    title: str
    text: str
    topics: tuple[str, ...]
    files: tuple[str, ...]
    confidence: float


def _basename(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _topics(source: Source) -> list[str]:
    # A prompt's or a reply's title only repeats its text behind a prefix ("Prompt: ...").
    said = source.text if source.kind in LONG_FORM and source.text else f"{source.title}\n{source.text}"
    tool = set(topics(source.tool or ""))
    counted = Counter(word for word in topics(_PATH.sub(" ", said)) if word not in tool)
    words = [word for word, _ in counted.most_common(TOPICS_PER_EVENT)]
    return words + [f"file:{_basename(path)}" for path in source.files]


def _overlap(a: frozenset[int], b: frozenset[int]) -> float:
    return len(a & b) / min(len(a), len(b))


def groups(sources: Sequence[Source]) -> list[tuple[frozenset[int], tuple[str, ...]]]:
    """(event ids, topics) of each group of MIN_GROUP or more events, largest first."""
    by_topic: dict[str, set[int]] = {}
    for source in sources:
        for topic in _topics(source):
            by_topic.setdefault(topic, set()).add(source.id)
    found: list[tuple[frozenset[int], tuple[str, ...]]] = [
        (frozenset(ids), (topic,)) for topic, ids in by_topic.items() if len(ids) >= MIN_GROUP
    ]
    merged = True
    while merged:
        merged = False
        for i in range(len(found)):
            for j in range(i + 1, len(found)):
                if _overlap(found[i][0], found[j][0]) > 0.5:
                    found[i] = (found[i][0] | found[j][0], tuple(dict.fromkeys(found[i][1] + found[j][1])))
                    del found[j]
                    merged = True
                    break
            if merged:
                break
    return sorted(found, key=lambda g: (-len(g[0]), sorted(g[0])))


def _point(source: Source) -> str:
    for sentence in _SENTENCE.split(source.text or source.title):
        flat = " ".join(sentence.split())
        if len(flat) > 10:
            return flat if len(flat) <= POINT_CHARS else flat[: POINT_CHARS - 1] + "…"
    return " ".join(source.title.split())[:POINT_CHARS]


def consolidate(members: Sequence[Source], group_topics: Sequence[str]) -> Consolidated:
    """The consolidated memory of one group (members in time order)."""
    ordered = sorted(members, key=lambda s: (s.ts, s.id))
    gaps = [b.ts - a.ts for a, b in pairwise(ordered)]
    mean_gap_hours = sum(gaps) / len(gaps) / 3600 if gaps else 0.0
    shown = tuple(group_topics[:5])
    confidence = (
        0.4 * min(len(ordered) / 10, 1.0)
        + 0.4 * max(0.0, 1 - mean_gap_hours / 24)
        + 0.2 * min(3 / max(len(group_topics), 1), 1.0)
    )
    files = tuple(dict.fromkeys(_basename(path) for source in ordered for path in source.files))[:10]
    points = [f"- [mem:{s.cite}] {_point(s)}" for s in ordered[:KEY_POINTS]]
    lines = [f"Topics: {', '.join(shown)}", "Key points:", *points]
    if files:
        lines.append(f"Files: {', '.join(files)}")
    title = f"Consolidated: {', '.join(t.removeprefix('file:') for t in shown[:3])} ({len(ordered)} events)"
    return Consolidated(tuple(s.id for s in ordered), title, "\n".join(lines), shown, files, round(confidence, 4))


def set_key(event_ids: Sequence[int]) -> str:
    """The identity of a set of events: the same set is never consolidated twice."""
    return hashlib.sha256(",".join(map(str, sorted(event_ids))).encode()).hexdigest()[:32]


def _run(conn: sqlite3.Connection, now: float) -> int:
    made = 0
    for project_id in table.working_set_projects(conn):
        sources = {source.id: source for source in table.candidates(conn, project_id)}
        taken: set[int] = set()
        for ids, shared in groups(list(sources.values())):
            members = [sources[i] for i in sorted(ids - taken)]
            key = set_key([m.id for m in members])
            if len(members) < MIN_GROUP or table.is_consolidated(conn, key):
                continue
            memory = consolidate(members, shared)
            meta = {"sources": list(memory.sources), "topics": list(memory.topics), "files": list(memory.files),
                    "confidence": memory.confidence}  # fmt: skip
            event_id = insert_derived(
                conn, f"consolidated:{key}", None, project_id, "consolidated", memory.title, memory.text, meta, 2,
                max(m.ts for m in members), now,
            )  # fmt: skip
            table.record(conn, event_id, key, memory.confidence, memory.sources, now)
            taken.update(memory.sources)
            made += 1
    return made


run = atomically(_run)
"""Consolidate every project's working set (one transaction); return the memories made."""
