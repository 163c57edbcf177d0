"""Retrieval quality on the golden sets: Hit@1/3/5, MRR, nDCG@5 and no-match accuracy.

Each golden file (../shared/fixtures/golden/*.json) becomes one project of a fresh
daemon: every memory is ingested as a prompt over the socket, the outbox is drained
(every memory embedded), then every query is searched in that project, once per lane
and once fused.  A ``match`` query counts as a hit at k when an expected id is among
the first k results; a ``no_match`` query is right when no result reaches the
confidence threshold (``[retrieval] min_confidence``).

The fused run also shows how the confidences calibrate what memd does on its own: which
smart_search rule fires (``memd/retrieve/smart.py``) and what a prompt would be given
(``memd/retrieve/prompt_gate.py``: details at >= PROMPT_HIGH, index lines at >= min_confidence, else
nothing), for match queries against no-match traps.

    .venv/bin/python bench/retrieval.py [--verbose]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from harness import REPO, isolated_daemon, markdown_table

from memd.config import RetrievalConfig
from memd.protocol import Ingest, Ingested, Search, SearchResults
from memd.retrieve.prompt_gate import PROMPT_HIGH
from memd.retrieve.smart import choose
from memd_client.rpc import Client

GOLDEN = REPO.parent / "shared" / "fixtures" / "golden"
RUNS = {"fused": [], "keyword": ["keyword", "trigram", "substring"], "vector": ["vector"]}
THRESHOLD = RetrievalConfig().min_confidence


def load(client: Client, path: Path, root: str) -> dict[int, str]:
    """Ingest a golden file's memories as prompts of one project; event id -> memory id."""
    data = json.loads(path.read_text())
    cwd = os.path.join(root, path.stem)
    os.makedirs(cwd, exist_ok=True)
    session = str(uuid.uuid4())
    ids = {}
    for memory in data["memories"]:
        payload = {
            "session_id": session,
            "cwd": cwd,
            "hook_event_name": "UserPromptSubmit",
            "prompt": memory["content"],
            "transcript_path": "/dev/null",
        }
        reply = client.call(
            Ingest(event="UserPromptSubmit", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode()),
            Ingested,
        )
        ids[reply.event_id] = memory["id"]
    return ids


def dcg(relevances: Sequence[float]) -> float:
    return sum(rel / math.log2(rank + 1) for rank, rel in enumerate(relevances, 1))


def evaluate(client: Client, path: Path, root: str, ids: dict[int, str], lanes: list[str]) -> list[dict]:
    data = json.loads(path.read_text())
    cwd = os.path.join(root, path.stem)
    rows = []
    for q in data["queries"]:
        reply = client.call(Search(query=q["query"], limit=5, cwd=cwd, lanes=lanes), SearchResults)
        found = [ids.get(hit.id, "?") for hit in reply.results]
        confident = [ids.get(hit.id, "?") for hit in reply.results if hit.confidence >= THRESHOLD]
        row = {"set": path.stem, "id": q["queryId"], "query": q["query"], "expectation": q["expectation"]}
        row["results"] = [(ids.get(h.id, "?"), h.confidence) for h in reply.results]
        row["rule"] = choose([h.confidence for h in reply.results], THRESHOLD).rule
        top = reply.results[0].confidence if reply.results else 0.0
        row["gate"] = "details" if top >= PROMPT_HIGH else "index lines" if top >= THRESHOLD else "nothing"
        if q["expectation"] == "match":
            expected = set(q["expectedIds"])
            first = next((rank for rank, memory in enumerate(found, 1) if memory in expected), None)
            relevance = q.get("expectedRelevance") or dict.fromkeys(expected, 1)
            ideal = dcg(sorted(relevance.values(), reverse=True)[:5])
            row.update(
                k=3,
                first=first,
                rr=1 / first if first else 0.0,
                ndcg=dcg([relevance.get(memory, 0) for memory in found[:5]]) / ideal if ideal else 0.0,
                confident=bool(first) and found[first - 1] in confident,
            )
        else:
            row["ok"] = not confident
        rows.append(row)
    return rows


def summarize(rows: list[dict]) -> dict[str, float]:
    matches = [r for r in rows if r["expectation"] == "match"]
    traps = [r for r in rows if r["expectation"] == "no_match"]
    hit = {k: sum(1 for r in matches if r["first"] and r["first"] <= k) / len(matches) for k in (1, 3, 5)}
    return {
        "Hit@1": hit[1],
        "Hit@3": hit[3],
        "Hit@5": hit[5],
        "MRR": sum(r["rr"] for r in matches) / len(matches),
        "nDCG@5": sum(r["ndcg"] for r in matches) / len(matches),
        "no-match": sum(r["ok"] for r in traps) / len(traps),
        "confident": sum(r["confident"] for r in matches) / len(matches),
    }


def drain(instance, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        embedding = instance.status().embedding
        if embedding and embedding.state == "ready" and embedding.backlog == 0:
            return
        time.sleep(0.2)
    raise SystemExit(f"the outbox did not drain: {instance.status().embedding}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verbose", action="store_true", help="print every query with its results")
    args = parser.parse_args()
    files = sorted(GOLDEN.glob("*.json"))
    with isolated_daemon() as instance, instance.client() as client:
        loaded = {path: load(client, path, instance.root) for path in files}
        drain(instance)
        table = []
        behaviour: list[list[object]] = []
        for run, lanes in RUNS.items():
            rows = [row for path in files for row in evaluate(client, path, instance.root, loaded[path], lanes)]
            table.append([run, *(f"{v:.3f}" for v in summarize(rows).values())])
            if run == "fused":
                behaviour = calibration(rows)
            if args.verbose or run == "fused":
                for row in rows:
                    good = row.get("ok", row.get("first") is not None and row.get("first", 9) <= row.get("k", 3))
                    if args.verbose or not good:
                        print(f"[{run}] {'ok ' if good else 'BAD'} {row['id']}: {row['query']!r}", file=sys.stderr)
                        print(f"      {row['results']}", file=sys.stderr)
    queries = sum(len(json.loads(p.read_text())["queries"]) for p in files)
    print(f"golden sets: {', '.join(p.stem for p in files)} ({queries} queries); threshold {THRESHOLD}\n")
    print(markdown_table(["lanes", "Hit@1", "Hit@3", "Hit@5", "MRR", "nDCG@5", "no-match", "confident"], table))
    print("\nWhat the fused confidences make memd do (queries per outcome):\n")
    print(markdown_table(["decision", "outcome", "match queries", "no-match traps"], behaviour))
    return 0


def calibration(rows: list[dict]) -> list[list[object]]:
    """Rows of (decision, outcome, match count, no-match count) for smart_search and the prompt gate."""
    table: list[list[object]] = []
    for decision, key, outcomes in (
        ("smart_search rule", "rule", ("single", "clear_winner", "cluster", "index_only", "low_confidence")),
        ("prompt context", "gate", ("details", "index lines", "nothing")),
    ):
        for outcome in outcomes:
            counts = [sum(r[key] == outcome and r["expectation"] == e for r in rows) for e in ("match", "no_match")]
            table.append([decision, outcome, *counts])
    return table


if __name__ == "__main__":
    sys.exit(main())
