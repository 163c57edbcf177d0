"""memd's evaluation sets (bench/eval/): well formed, as large as issue 29 asks, with parts kept out of
tuning that exist.  The figures themselves are benchmarks (bench/eval_set.py, BENCHMARKS.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EVAL = Path(__file__).resolve().parent.parent / "bench" / "eval"


def test_every_file_passes_the_checker() -> None:
    result = subprocess.run([sys.executable, str(EVAL / "check.py")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(result.stdout.splitlines()) == len(list(EVAL.glob("conversations/*.json"))) + len(
        list(EVAL.glob("long_chats/*.json"))
    )


def test_sizes_and_untouched_parts() -> None:
    sys.path.insert(0, str(EVAL.parent))
    from eval_set import UNTOUCHED  # the harness's own list of what is never tuned on

    conversations = [json.loads(p.read_text()) for p in sorted(EVAL.glob("conversations/*.json"))]
    assert sum(len(c["questions"]) for c in conversations) >= 300
    assert all(len(c["sessions"]) >= 5 and len(c["speakers"]) == 2 for c in conversations)
    ids = {c["id"] for c in conversations}
    assert UNTOUCHED["conversations"] < ids and len(ids - UNTOUCHED["conversations"]) >= 3
    chats = [json.loads(p.read_text()) for p in sorted(EVAL.glob("long_chats/*.json"))]
    for chat in chats:
        chars = sum(len(m["text"]) for s in chat["sessions"] for m in s["messages"])
        assert chars >= 80_000, chat["id"]  # tens of thousands of tokens
    assert UNTOUCHED["long_chats"] < {c["id"] for c in chats}
