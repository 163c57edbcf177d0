"""Check the hand-written conversational and long-chat evaluation files (bench/eval/README.md).

    .venv/bin/python bench/eval/check.py [FILE ...]     # default: every file of both folders

A conversation (``conversations/*.json``): ``id``, ``speakers`` (two first names), ``sessions``
(each ``id``, ``date`` YYYY-MM-DD, ``turns``: ``id`` "S<n>:<m>", ``speaker``, ``text``) and
``questions`` (``id``, ``question``, ``evidence``: turn ids, ``category``).  A long chat
(``long_chats/*.json``): the same with ``messages`` (``role`` user|assistant) in place of ``turns``.
Prints a line per file with its sizes and how many question words its evidence shares, and exits
1 on the first structural fault.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CATEGORIES = {"fact", "who", "preference", "temporal", "multi-session", "reasoning", "recommendation"}
STOP_WORDS = """
    a an the and or but of to in on at for with from by about as is are was were be been being do does did
    what which who whom whose when where why how that this these those it its he she they them his her their
    i you we me my your our us has have had not no yes any some all can could would should will may might
    there here than then so if into over after before during up down out s t
"""
STOP = set(STOP_WORDS.split())


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) > 1}


def fail(path: Path, why: str) -> None:
    raise SystemExit(f"{path.name}: {why}")


def check(path: Path) -> str:
    data = json.loads(path.read_text())
    long_chat = path.parent.name == "long_chats"
    items = "messages" if long_chat else "turns"
    for key in ("id", "sessions", "questions"):
        if key not in data:
            fail(path, f"no {key!r}")
    if not long_chat and len(data.get("speakers", ())) != 2:
        fail(path, "speakers must name two people")
    texts: dict[str, str] = {}
    chars = 0
    for n, session in enumerate(data["sessions"], 1):
        if session.get("id") != f"S{n}":
            fail(path, f"session {n} must have id 'S{n}', not {session.get('id')!r}")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", session.get("date", "")):
            fail(path, f"session {session['id']}: date must be YYYY-MM-DD")
        for m, item in enumerate(session[items], 1):
            if item.get("id") != f"S{n}:{m}":
                fail(path, f"{items} {m} of S{n} must have id 'S{n}:{m}', not {item.get('id')!r}")
            who = item.get("role") if long_chat else item.get("speaker")
            allowed = ("user", "assistant") if long_chat else tuple(data["speakers"])
            if who not in allowed:
                fail(path, f"{item['id']}: {'role' if long_chat else 'speaker'} {who!r} not in {allowed}")
            if not isinstance(item.get("text"), str) or not item["text"].strip():
                fail(path, f"{item['id']}: empty text")
            texts[item["id"]] = item["text"]
            chars += len(item["text"])
    overlaps = []
    seen_q: set[str] = set()
    for q in data["questions"]:
        if q.get("id") in seen_q:
            fail(path, f"question id {q.get('id')!r} repeated")
        seen_q.add(q["id"])
        if q.get("category") not in CATEGORIES:
            fail(path, f"{q['id']}: category {q.get('category')!r} not in {sorted(CATEGORIES)}")
        evidence = q.get("evidence") or []
        if not evidence or any(e not in texts for e in evidence):
            fail(path, f"{q['id']}: evidence {evidence!r} must name existing {items}")
        qw = words(q["question"])
        shared = qw & set().union(*(words(texts[e]) for e in evidence))
        overlaps.append(len(shared) / max(1, len(qw)))
    n_items = len(texts)
    mean_overlap = sum(overlaps) / max(1, len(overlaps))
    return (
        f"{path.name}: {len(data['sessions'])} sessions, {n_items} {items}, {chars:,} chars (~{chars // 4:,} tokens), "
        f"{len(data['questions'])} questions, mean share of question words in the evidence {mean_overlap:.2f}, "
        f"{sum(o == 0 for o in overlaps)} questions sharing none"
    )


def main() -> int:
    paths = [Path(p) for p in sys.argv[1:]] or sorted(HERE.glob("conversations/*.json")) + sorted(
        HERE.glob("long_chats/*.json")
    )
    for path in paths:
        print(check(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
