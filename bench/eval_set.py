"""Retrieval quality on memd's three evaluation sets, per lane and fused, on the tuning and untouched parts.

    coding         bench/eval/coding_memory.json: memories of coding sessions, keyword /
                   paraphrase questions and no-match traps (bench/eval/README.md)
    conversations  bench/eval/conversations/*.json: multi-session chats between two people,
                   questions answered by single short turns
    long_chats     bench/eval/long_chats/*.json: one person's long history with an assistant,
                   questions answered by a few messages among tens of thousands of tokens

Each set is loaded into a fresh daemon through the socket the way its data would arrive:
a coding project's memories as one session (its prompts as prompts, the rest as memories the
session kept), each conversation as one project whose sessions are Claude Code sessions and
whose turns are prompts (``Name: words``), each long chat as one project whose user messages
are prompts and whose assistant messages are the replies Claude Code's Stop hook carries.
The outbox is drained (every event embedded), then every question is searched in its
project, once fused and once per lane (``LANE_RUNS``).

Every set has a part kept out of all tuning (``untouched``, ``UNTOUCHED``): fusion weights and
the confidence model are fitted on the ``tuning`` part only (``bench/fit.py`` reads ``--dump``).

Runs: ``fused`` (memd's search as users get it), each lane alone in its own order (``keyword``,
``context``, ``vector``, ``entity``), and ``bm25``: not memd at all, a plain SQLite FTS5 BM25 over
the same stored texts with each question as the OR of its words, the baseline to beat.

Per set, part, run and style: recall@5 and @10 (share of the evidence among the first k),
nDCG@10 over graded relevance (coding) or binary (others), MRR, confident (the share of
questions with evidence among the first 5 at or above ``[retrieval] min_confidence``: what a
prompt could be given), no-match accuracy (no result reaches it) and the p50 round trip of the
search call.

    .venv/bin/python bench/eval_set.py [--sets coding,conversations,long_chats] [--part tuning|untouched|all]
                                       [--runs fused,keyword,...] [--json] [--verbose] [--dump FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import re
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness import isolated_daemon, markdown_table, summary
from retrieval import drain

from memd.config import RetrievalConfig
from memd.protocol import Ingest, Ingested, Search, SearchResults
from memd.query import STOP_EN
from memd_client.rpc import Client

EVAL = Path(__file__).resolve().parent / "eval"
SET = EVAL / "coding_memory.json"
"""The coding-memory set (``bench/context.py`` and ``bench/models.py`` ask its questions too)."""
SETS = ("coding", "conversations", "long_chats")
UNTOUCHED = {
    "conversations": {"conv-02", "conv-05"},
    "long_chats": {"chat-02"},
}
"""The files kept out of all tuning; for the coding set, a third of the questions by a hash of their id
(``untouched``).  Chosen before any result was seen, and never changed."""
LANE_RUNS = {
    "fused": [],
    "keyword": ["keyword", "trigram", "substring"],
    "context": ["context"],
    "vector": ["vector"],
    "entity": ["entity"],
    "bm25": [],  # not memd: a plain FTS5 BM25 over the same texts (``bm25_baseline``)
}
THRESHOLD = RetrievalConfig().min_confidence
LIMIT = 10
DUMP_LIMIT = 60
"""Hits asked for per question when dumping candidates for the fit: the whole shortlist."""


class Question(dict[str, Any]):
    """id, query, style, expectation, expected ({memory id: relevance}), project, part."""


def untouched(set_name: str, unit: str) -> bool:
    """Whether ``unit`` (a file's id; a coding question's id) is in the untouched part."""
    if set_name == "coding":
        return int(hashlib.sha256(unit.encode()).hexdigest(), 16) % 3 == 0
    return unit in UNTOUCHED[set_name]


def _ingest(client: Client, event: str, payload: dict[str, Any], at: float, position: str) -> int:
    reply = client.call(
        Ingest(event=event, sent_at_ns=int(at * 1e9), payload=json.dumps(payload).encode(), position=position),
        Ingested,
    )
    return reply.event_id


def _session(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memd-eval:{name}"))


def load_coding(client: Client, root: str) -> tuple[dict[int, str], list[Question]]:
    data = json.loads(SET.read_text())
    cwd = os.path.join(root, "coding")
    os.makedirs(cwd, exist_ok=True)
    ids: dict[int, str] = {}
    at = time.time() - 86400
    for memory in data["memories"]:
        payload = {
            "session_id": _session(f"coding:{memory['project']}"),
            "cwd": cwd,
            "hook_event_name": "UserPromptSubmit",
            "prompt": memory["content"],
            "transcript_path": "/dev/null",
        }
        ids[_ingest(client, "UserPromptSubmit", payload, at, memory["id"])] = memory["id"]
        at += 1
    questions = [
        Question(
            id=q["queryId"],
            query=q["query"],
            style=q["style"],
            expectation=q["expectation"],
            expected=q.get("expectedRelevance") or dict.fromkeys(q["expectedIds"], 1),
            cwd=cwd,
            part="untouched" if untouched("coding", q["queryId"]) else "tuning",
        )
        for q in data["queries"]
    ]
    return ids, questions


def _files(folder: str) -> list[Path]:
    return sorted((EVAL / folder).glob("*.json"))


def _when(date: str, n: int) -> float:
    day = dt.datetime.fromisoformat(date).replace(hour=18, tzinfo=dt.UTC)
    return day.timestamp() + 60 * n


def load_dialogues(client: Client, root: str, folder: str) -> tuple[dict[int, str], list[Question]]:
    """Conversations (every turn a prompt, ``Name: words``) or long chats (user messages as prompts,
    assistant messages as the Stop hook's last message)."""
    ids: dict[int, str] = {}
    questions: list[Question] = []
    for path in _files(folder):
        data = json.loads(path.read_text())
        cwd = os.path.join(root, data["id"])
        os.makedirs(cwd, exist_ok=True)
        for session in data["sessions"]:
            session_id = _session(f"{data['id']}:{session['id']}")
            common = {"session_id": session_id, "cwd": cwd, "transcript_path": "/dev/null"}
            for n, item in enumerate(session.get("turns") or session["messages"]):
                key = f"{data['id']}:{item['id']}"
                at = _when(session["date"], n)
                if "speaker" in item:
                    payload = {
                        **common,
                        "hook_event_name": "UserPromptSubmit",
                        "prompt": f"{item['speaker']}: {item['text']}",
                    }
                    event = "UserPromptSubmit"
                elif item["role"] == "user":
                    payload = {**common, "hook_event_name": "UserPromptSubmit", "prompt": item["text"]}
                    event = "UserPromptSubmit"
                else:
                    payload = {
                        **common,
                        "hook_event_name": "Stop",
                        "stop_hook_active": False,
                        "last_assistant_message": item["text"],
                    }
                    event = "Stop"
                ids[_ingest(client, event, payload, at, key)] = key
        part = "untouched" if untouched(folder, data["id"]) else "tuning"
        questions += [
            Question(
                id=f"{data['id']}:{q['id']}",
                query=q["question"],
                style=q["category"],
                expectation="match",
                expected=dict.fromkeys((f"{data['id']}:{e}" for e in q["evidence"]), 1),
                cwd=cwd,
                part=part,
            )
            for q in data["questions"]
        ]
    return ids, questions


def dcg(relevances: Sequence[float]) -> float:
    return sum(rel / math.log2(rank + 1) for rank, rel in enumerate(relevances, 1))


def evaluate(
    client: Client, questions: Sequence[Question], ids: dict[int, str], lanes: list[str], limit: int = LIMIT
) -> Iterator[tuple[dict[str, Any], SearchResults]]:
    """One row per question: what came back, how long it took, and its scores."""
    for q in questions:
        started = time.perf_counter()
        reply = client.call(Search(query=q["query"], limit=limit, cwd=q["cwd"], lanes=lanes), SearchResults)
        elapsed_ms = (time.perf_counter() - started) * 1000
        found = [ids.get(hit.id, "?") for hit in reply.results]
        results = [(ids.get(h.id, "?"), round(h.confidence, 3)) for h in reply.results[:LIMIT]]
        row = _scored(q, found, results, elapsed_ms)
        yield row, reply


def bm25_baseline(database: str, questions: Sequence[Question], ids: dict[int, str]) -> list[dict[str, Any]]:
    """The rows a plain SQLite FTS5 BM25 scores, outside memd: the same stored texts (one table per
    project, ``porter unicode61``), each question as the OR of its words (the baseline of issue 29)."""
    source = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    stored = source.execute(
        "SELECT e.id, p.root, e.text FROM events e JOIN projects p ON p.id = e.project_id"
    ).fetchall()
    source.close()
    tables: dict[str, sqlite3.Connection] = {}
    for event_id, root, text in stored:
        if event_id not in ids:
            continue
        if root not in tables:
            tables[root] = sqlite3.connect(":memory:")
            tables[root].execute("CREATE VIRTUAL TABLE d USING fts5(text, tokenize='porter unicode61')")
        tables[root].execute("INSERT INTO d (rowid, text) VALUES (?, ?)", (event_id, text))
    rows = []
    for q in questions:
        words = [w for w in re.findall(r"\w+", q["query"].lower()) if w not in STOP_EN]
        table = tables.get(q["cwd"])
        found: list[str] = []
        if words and table is not None:
            match = " OR ".join(f'"{w}"' for w in words)
            found = [ids[r[0]] for r in table.execute("SELECT rowid FROM d WHERE d MATCH ? ORDER BY bm25(d) LIMIT ?",
                                                      (match, LIMIT))]  # fmt: skip
        rows.append(_scored(q, found, [], 0.0))
    return rows


def _scored(q: Question, found: list[str], results: list[tuple[str, float]], ms: float) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": q["id"], "query": q["query"], "style": q["style"], "expectation": q["expectation"],
        "part": q["part"], "ms": ms, "results": results,
    }  # fmt: skip
    if q["expectation"] == "match":
        relevance: dict[str, int] = q["expected"]
        first = next((rank for rank, memory in enumerate(found[:LIMIT], 1) if memory in relevance), None)
        ideal = dcg(sorted(relevance.values(), reverse=True)[:LIMIT])
        row.update(
            recall5=len(set(found[:5]) & relevance.keys()) / len(relevance),
            recall10=len(set(found[:LIMIT]) & relevance.keys()) / len(relevance),
            ndcg10=dcg([relevance.get(memory, 0) for memory in found[:LIMIT]]) / ideal if ideal else 0.0,
            rr=1 / first if first else 0.0,
            confident=float(any(memory in relevance and confidence >= THRESHOLD for memory, confidence in results[:5])),
            expected=relevance,
        )
    else:
        row["ok"] = not results or all(confidence < THRESHOLD for _, confidence in results)
    return row


def scores(rows: Sequence[dict[str, Any]]) -> dict[str, float | int | None]:
    """The metrics of a group of rows; None where the group has no question they apply to."""
    matches = [r for r in rows if r["expectation"] == "match"]
    traps = [r for r in rows if r["expectation"] == "no_match"]

    def mean(key: str) -> float | None:
        return sum(r[key] for r in matches) / len(matches) if matches else None

    return {
        "questions": len(rows),
        "recall@5": mean("recall5"),
        "recall@10": mean("recall10"),
        "nDCG@10": mean("ndcg10"),
        "MRR": mean("rr"),
        "confident": mean("confident"),
        "no-match": sum(r["ok"] for r in traps) / len(traps) if traps else None,
        "p50 ms": summary([r["ms"] for r in rows])["p50"] if rows else None,
    }


def styles(set_name: str, rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The groups a set reports: all questions that have evidence, then each style."""
    groups = {"match": [r for r in rows if r["expectation"] == "match"]}
    for style in sorted({r["style"] for r in rows}):
        groups[style] = [r for r in rows if r["style"] == style]
    return groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated, of %(default)s")
    parser.add_argument("--part", choices=("tuning", "untouched", "all"), default="all")
    parser.add_argument("--runs", default=",".join(LANE_RUNS), help="comma-separated, of %(default)s")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--verbose", action="store_true", help="print every missed question with its results")
    parser.add_argument("--dump", type=Path, help="write the tuning questions' candidates with their features")
    parser.add_argument("--dump-untouched", type=Path, help="the same for the untouched questions (never fitted on)")
    args = parser.parse_args()
    chosen = [s for s in args.sets.split(",") if s]
    runs = {name: LANE_RUNS[name] for name in args.runs.split(",") if name}
    results: list[dict[str, Any]] = []
    dumped: dict[Path, list[dict[str, Any]]] = {}
    embed_s = 0.0
    for set_name in chosen:  # each in a store of its own: BM25's statistics and caps are the set's
        with isolated_daemon() as instance, instance.client() as client:
            if set_name == "coding":
                ids, questions = load_coding(client, instance.root)
            else:
                ids, questions = load_dialogues(client, instance.root, set_name)
            started = time.monotonic()
            drain(instance, timeout=1800.0)
            embed_s += time.monotonic() - started
            chosen_questions = [q for q in questions if args.part in ("all", q["part"])]
            parts = ("tuning", "untouched") if args.part == "all" else (args.part,)
            for run, lanes in runs.items():
                if run == "bm25":
                    rows = bm25_baseline(instance.paths.database, chosen_questions, ids)
                else:
                    rows = [row for row, _ in evaluate(client, chosen_questions, ids, lanes)]
                for row in rows if args.verbose and run == "fused" else ():
                    if not (row.get("ok") or row.get("recall5")):
                        print(f"[{set_name}] MISS {row['id']} ({row['style']}): {row['query']!r}", file=sys.stderr)
                        print(f"      expected {row.get('expected', {})}; got {row['results'][:5]}", file=sys.stderr)
                for part in parts:
                    in_part = [r for r in rows if r["part"] == part]
                    for style, group in styles(set_name, in_part).items():
                        results.append({"set": set_name, "part": part, "run": run, "style": style, **scores(group)})
            for part, path in (("tuning", args.dump), ("untouched", args.dump_untouched)):
                if path is None:
                    continue
                part_questions = [q for q in questions if q["part"] == part]
                for row, reply in evaluate(client, part_questions, ids, [], limit=DUMP_LIMIT):
                    dumped.setdefault(path, []).append({
                        "set": set_name, "id": row["id"], "style": row["style"], "expectation": row["expectation"],
                        "expected": sorted(row.get("expected", {})),
                        "hits": [
                            {"memory": ids.get(h.id, "?"), "features": {**h.features, "_confidence": h.confidence}}
                            for h in reply.results
                        ],
                    })  # fmt: skip
    for path, rows in dumped.items():
        path.write_text(json.dumps(rows))
    if args.json:
        print(json.dumps({"threshold": THRESHOLD, "embed_seconds": round(embed_s, 1), "results": results}, indent=2))
        return 0
    print(f"threshold {THRESHOLD}; embedded in {embed_s:.1f} s\n")
    headers = ["set", "part", "run", "style", "questions", "recall@5", "recall@10", "nDCG@10", "MRR", "confident",
               "no-match", "p50 ms"]  # fmt: skip
    table = [[r[h] if r[h] is not None else "-" for h in headers] for r in results]
    print(markdown_table(headers, table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
