"""Retrieval quality on memd's coding-memory set: recall@5, nDCG@10, MRR, no-match accuracy, p50 latency.

The set (bench/eval/coding_memory.json, see bench/eval/README.md) holds memories of coding
sessions over six fictional projects (prompts, tool calls, tool errors, decisions, tasks,
edits, session summaries) and queries of three styles: ``keyword`` (the words a developer
would type, sharing identifiers with the answer), ``paraphrase`` (almost no content word in
common with the answer) and ``no_match`` (plausible questions the set cannot answer).

It is loaded into a fresh daemon as one project the way bench/retrieval.py loads the golden
sets (every memory ingested as a prompt, the outbox drained so every memory is embedded),
then every query is searched in that project, 10 results, once fused and once per lane.
Per lane and style: recall@5 (share of the expected ids among the first 5), Hit@5 (an
expected id among the first 5), nDCG@10 over the graded relevance (3/2/1), MRR over the
first 10, no-match accuracy (no result reaches ``[retrieval] min_confidence``) and the p50
round trip of the search call.

    .venv/bin/python bench/eval_set.py [--set PATH] [--json] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from harness import isolated_daemon, markdown_table, summary
from retrieval import RUNS, THRESHOLD, dcg, drain, load

from memd.protocol import Search, SearchResults
from memd_client.rpc import Client

SET = Path(__file__).resolve().parent / "eval" / "coding_memory.json"
STYLES = ("keyword", "paraphrase", "match", "no_match")
LIMIT = 10


def evaluate(client: Client, path: Path, root: str, ids: dict[int, str], lanes: list[str]) -> list[dict]:
    """One row per query: what came back, how long it took, and its scores."""
    data = json.loads(path.read_text())
    cwd = os.path.join(root, path.stem)
    rows = []
    for q in data["queries"]:
        started = time.perf_counter()
        reply = client.call(Search(query=q["query"], limit=LIMIT, cwd=cwd, lanes=lanes), SearchResults)
        elapsed_ms = (time.perf_counter() - started) * 1000
        found = [ids.get(hit.id, "?") for hit in reply.results]
        row: dict = {
            "id": q["queryId"],
            "query": q["query"],
            "style": q["style"],
            "expectation": q["expectation"],
            "ms": elapsed_ms,
            "results": [(ids.get(h.id, "?"), round(h.confidence, 3)) for h in reply.results],
        }
        if q["expectation"] == "match":
            relevance: dict[str, int] = q.get("expectedRelevance") or dict.fromkeys(q["expectedIds"], 1)
            first = next((rank for rank, memory in enumerate(found, 1) if memory in relevance), None)
            ideal = dcg(sorted(relevance.values(), reverse=True)[:LIMIT])
            row.update(
                recall5=len(set(found[:5]) & relevance.keys()) / len(relevance),
                hit5=bool(first and first <= 5),
                ndcg10=dcg([relevance.get(memory, 0) for memory in found[:LIMIT]]) / ideal if ideal else 0.0,
                rr=1 / first if first else 0.0,
                expected=relevance,
            )
        else:
            row["ok"] = not any(hit.confidence >= THRESHOLD for hit in reply.results)
        rows.append(row)
    return rows


def scores(rows: Sequence[dict]) -> dict[str, float | int | None]:
    """The metrics of a group of rows; None where the group has no query they apply to."""
    matches = [r for r in rows if r["expectation"] == "match"]
    traps = [r for r in rows if r["expectation"] == "no_match"]

    def mean(key: str) -> float | None:
        return sum(r[key] for r in matches) / len(matches) if matches else None

    return {
        "queries": len(rows),
        "recall@5": mean("recall5"),
        "Hit@5": mean("hit5"),
        "nDCG@10": mean("ndcg10"),
        "MRR": mean("rr"),
        "no-match": sum(r["ok"] for r in traps) / len(traps) if traps else None,
        "p50 ms": summary([r["ms"] for r in rows])["p50"],
    }


def by_style(rows: Sequence[dict], style: str) -> list[dict]:
    if style == "match":
        return [r for r in rows if r["expectation"] == "match"]
    return [r for r in rows if r["style"] == style]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, default=SET, help="the evaluation file (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--verbose", action="store_true", help="print every missed query with its results")
    args = parser.parse_args()
    data = json.loads(args.set.read_text())
    with isolated_daemon() as instance, instance.client() as client:
        ids = load(client, args.set, instance.root)
        started = time.monotonic()
        drain(instance, timeout=600.0)
        embed_s = time.monotonic() - started
        results = []
        for run, lanes in RUNS.items():
            rows = evaluate(client, args.set, instance.root, ids, lanes)
            results += [{"lanes": run, "style": style, **scores(by_style(rows, style))} for style in STYLES]
            if args.verbose:
                for row in rows:
                    good = row["ok"] if row["expectation"] == "no_match" else row["hit5"]
                    if not good:
                        print(f"[{run}] BAD {row['id']} ({row['style']}): {row['query']!r}", file=sys.stderr)
                        print(f"      expected {row.get('expected', {})}; got {row['results'][:5]}", file=sys.stderr)
    counts = {style: len(by_style(data["queries"], style)) for style in STYLES}
    if args.json:
        report = {
            "set": args.set.name,
            "memories": len(data["memories"]),
            "queries": counts,
            "threshold": THRESHOLD,
            "embed_seconds": round(embed_s, 1),
            "results": results,
        }
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"{args.set.name}: {len(data['memories'])} memories, {len(data['queries'])} queries "
        f"({', '.join(f'{n} {s}' for s, n in counts.items() if s != 'match')}); "
        f"threshold {THRESHOLD}; embedded in {embed_s:.1f} s\n"
    )
    headers = ["lanes", "style", "queries", "recall@5", "Hit@5", "nDCG@10", "MRR", "no-match", "p50 ms"]
    table = [[r[h] if r[h] is not None else "-" for h in headers] for r in results]
    print(markdown_table(headers, table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
