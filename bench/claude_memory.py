"""What reading Claude Code's own memory costs the prompt hook (issue 22).

A daemon on the synthetic corpus (``--sizes``) answers the real hook client's
UserPromptSubmit, interleaved with ``python -I -S -c pass``, as the first prompt of a new
session and as a later prompt of one session, each two ways:

- **no Claude Code memory**: ``transcript_path`` is ``/dev/null`` (memd finds no Claude Code
  home, so it looks at no folder and reads no transcript);
- **memory folder**: a Claude Code home with ``FILES`` memory files and their ``MEMORY.md``,
  and a transcript of ``TRANSCRIPT_MB`` of real records from the fixtures, with a recall
  attachment every 200 lines: each prompt has the folder looked at (a ``stat`` per file),
  the transcript's new lines read (a first prompt: all of it, as a session resumed after
  the daemon restarted), and what Claude Code gave the session compared with memd's block.

Reported: p50 / p95 in ms, each p50 ÷ the floor's, and the difference to the same prompt
without Claude Code's memory.

    .venv/bin/python bench/claude_memory.py --sizes 10000 --runs 60   # from the repository root
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import uuid
from pathlib import Path
from typing import Any

from context import TRANSCRIPTS, corpus_daemon, log, python_floor, run_hook
from corpus import Corpus
from harness import markdown_table, parse_arguments, summary
from search import queries

from memd.capture.claude_memory import slug

FILES = 200
"""Memory files in the folder: Claude Code lists at most 200 of them."""
TRANSCRIPT_MB = 5.0


def claude_home(base: Path, root: str, files: int, transcript_mb: float) -> Path:
    """A Claude Code home with ``files`` memory files for ``root``; a transcript of the project."""
    folder = base / ".claude" / "projects" / slug(root) / "memory"
    folder.mkdir(parents=True)
    index = []
    for i in range(files):
        name = f"fact-{i:03d}"
        (folder / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: Fact {i}: the service on port {8000 + i} restarts after a deploy\n"
            f"metadata:\n  type: project\n---\n\nThe service on port {8000 + i} restarts after each deploy.\n\n"
            "**Why:** its config is read at start.\n**How to apply:** restart it after changing the config.\n"
        )
        index.append(f"- [Fact {i}]({name}.md) — the service on port {8000 + i} restarts after a deploy")
    (folder / "MEMORY.md").write_text("\n".join(index) + "\n")
    lines = [line for path in sorted(TRANSCRIPTS.glob("*.jsonl")) for line in path.read_text().splitlines() if line]
    transcript = base / ".claude" / "projects" / slug(root) / f"{uuid.uuid4()}.jsonl"
    target, written = transcript_mb * 1024 * 1024, 0
    with transcript.open("w") as out:
        k = 0
        while written < target:
            line = lines[k % len(lines)]
            if k % 200 == 0:
                memory = folder / f"fact-{k % max(files, 1):03d}.md"
                attachment = {"path": str(memory), "content": memory.read_text() if files else "", "mtimeMs": 0}
                record = {"type": "attachment", "attachment": {"type": "relevant_memories", "memories": [attachment]}}
                line = json.dumps(record)
            out.write(line + "\n")
            written += len(line) + 1
            k += 1
    return transcript


def measure(n: int, runs: int, warmup: int, seed: int, files: int, transcript_mb: float) -> dict[str, Any]:
    qs = [q for _, q in queries(Corpus(seed))]
    base = Path(tempfile.mkdtemp(prefix="memd-bench-cm-"))
    try:
        with corpus_daemon(n, seed) as (instance, root, ready_s):
            transcript = claude_home(base, root, files, transcript_mb)
            log(f"at {n:,}: ready in {ready_s:.1f} s; {files} memory files, transcript {transcript_mb} MB; {runs} runs")
            token = uuid.uuid4().hex[:8]

            def prompt(k: int, path: str, session: str) -> dict[str, Any]:
                return {
                    "session_id": session, "transcript_path": path, "cwd": root, "permission_mode": "default",
                    "hook_event_name": "UserPromptSubmit", "prompt_id": str(uuid.uuid4()), "prompt": qs[k % len(qs)],
                }  # fmt: skip

            def fresh(k: int) -> str:  # a session of its own: its transcript read whole
                copy = transcript.with_name(f"{uuid.uuid4()}.jsonl")
                shutil.copyfile(transcript, copy)
                return str(copy)

            series = {
                "python -I -S -c pass": python_floor(instance),
                "no Claude Code memory, first prompt": lambda k: run_hook(
                    instance, "UserPromptSubmit", prompt(k, "/dev/null", f"b-{token}-none-{k}")
                ),
                "memory folder, first prompt (whole transcript read)": lambda k: run_hook(
                    instance, "UserPromptSubmit", prompt(k, fresh(k), f"b-{token}-first-{k}")
                ),
                "no Claude Code memory, later prompt": lambda k: run_hook(
                    instance, "UserPromptSubmit", prompt(k, "/dev/null", f"b-{token}-none")
                ),
                "memory folder, later prompt": lambda k: run_hook(
                    instance, "UserPromptSubmit", prompt(k, str(transcript), f"b-{token}-on")
                ),
            }
            timed: dict[str, list[float]] = {name: [] for name in series}
            for k in range(warmup + runs):
                for name, run in series.items():
                    ms, _context = run(k)
                    if k >= warmup:
                        timed[name].append(ms)
            conn = sqlite3.connect(f"file:{instance.paths.database}?mode=ro", uri=True)
            (mirrored,) = conn.execute("SELECT count(*) FROM claude_memory_files WHERE event_id IS NOT NULL").fetchone()
            savings = conn.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM claude_memory_savings").fetchone()
            conn.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {
        "n": n, "files": files, "transcript_mb": transcript_mb, "mirrored": mirrored,
        "answers_with_repeats": savings[0], "tokens_left_out": savings[1],
        "ms": {name: summary(values) for name, values in timed.items()},
    }  # fmt: skip


def report(results: list[dict[str, Any]]) -> str:
    rows = []
    for r in results:
        floor = r["ms"]["python -I -S -c pass"]["p50"]
        for name, s in r["ms"].items():
            ratio = f"{s['p50'] / floor:.2f}" if not name.startswith("python") else ""
            alike = name.replace("memory folder", "no Claude Code memory").replace(" (whole transcript read)", "")
            delta = f"{s['p50'] - r['ms'][alike]['p50']:+.2f}" if name.startswith("memory") else ""
            rows.append([f"{r['n']:,}", name, round(s["p50"], 2), round(s["p95"], 2), ratio, delta])
    notes = [
        f"at {r['n']:,}: {r['mirrored']} of {r['files']} files mirrored; {r['answers_with_repeats']} answers left"
        f" out repeats (~{r['tokens_left_out']} tokens); transcript {r['transcript_mb']} MB"
        for r in results
    ]
    head = ["events", "UserPromptSubmit hook", "p50 ms", "p95 ms", "p50 ÷ floor", "p50 minus the same without"]
    return "\n".join([markdown_table(head, rows), "", *notes])


def main() -> int:
    args, _parts, sizes = parse_arguments(__doc__ or "", "latency")
    results = [measure(n, args.runs, args.warmup, args.seed, FILES, TRANSCRIPT_MB) for n in sizes]
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
