"""A deterministic corpus of realistic coding-session events, and databases built from it.

The generator writes Claude Code hook payloads (the shapes of
``../shared/fixtures/claude-code/hooks``) for sessions of a few projects, and runs each
through memd's own capture pipeline (``memd.capture.Capture``: privacy filter, normalize,
clip), so kinds, titles, text, meta and importance are exactly what the daemon would
store.  A session is: SessionStart, then turns of a prompt (about 5% of sessions are in
Korean, with English identifiers), 2-14 tool calls (Bash with pytest/git/npm/pip/ruff
output, failures with tracebacks, Read/Edit/Write of plausible paths with code, Grep,
Glob, TodoWrite/TaskUpdate) and the assistant's reply (Stop), then SessionEnd.  Text is
~200 B-4 KB per event (SessionStart/End are shorter, as in life).

Vocabulary: English function words, a few hundred programming words and per-project
identifiers (snake_case, CamelCase), file paths, hex hashes and numbers, each drawn from
a Zipf distribution (s ~ 1.1), so a handful of words ("the", "test", "error", "file")
is in most rows and most identifiers are rare, as in real logs.

Every event comes from one of 3,000 templates (600 per project): the template fixes
what the event is about (the command and failing test, the file read, the prompt's
intent and main identifiers); the event's own random stream varies the rest (numbers,
outputs, filler words, secondary names).  Real embedding runs at 5-25 texts/s here (long
windows), so a million events cannot be embedded; instead
``build_database`` embeds each template's canonical text once with the real model
(``template_vectors``, cached) and gives every text the indexer would embed for an event
(``event_vectors``: the head and windows of ``memd.retrieve.windows.event_windows``) the vector
of its template plus gaussian noise (sigma ``NOISE`` per dimension, cosine ~0.9 to the
template), renormalized, stored as float16 in ``vectors``; the outbox rows are then
marked done and the embedding version recorded, so a daemon opening the database sees a
fully embedded store.  The vector lane's *latency* is realistic with this (same count,
dimension and HNSW index); its *quality* is not measured here.

Same seed, same corpus: the event stream is a fixed sequence and ``events(n)`` is its
first ``n`` events.  Used by ``bench/search.py``; on its own it builds one database::

    .venv/bin/python bench/corpus.py OUT.sqlite3 --events 10000 [--seed 1] [--no-vectors] [--no-cjk]
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import itertools
import json
import multiprocessing
import os
import random
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate
from typing import Any, NamedTuple

import numpy as np

from memd.capture.events import Skipped
from memd.capture.prepare import Capture, NewEvent
from memd.capture.privacy import Privacy
from memd.config import CaptureConfig, EmbeddingConfig, PrivacyConfig
from memd.protocol import Ingest
from memd.store.batch import write_batch
from memd.store.outbox import encode
from memd.store.schema import MIGRATIONS, migrate

__all__ = [
    "GENERATOR_VERSION",
    "PROJECTS",
    "Corpus",
    "Generated",
    "build_database",
    "template_vectors",
]

GENERATOR_VERSION = 1
"""Bump when the generated text changes: cached databases are keyed by it."""
TEMPLATES_PER_PROJECT = 600
NOISE = 0.025
"""Per-dimension sigma of the noise added to a template's vector (384-d: cosine ~0.9)."""
BATCH = 2000
END_TS = 1_793_491_200.0  # 2026-11-01 00:00 UTC: the corpus's last session starts before it
SESSION_GAP = 1700.0

PROJECTS: tuple[tuple[str, str], ...] = (
    ("/home/dev/src/memd", "py"),
    ("/home/dev/src/shopfront", "ts"),
    ("/home/dev/work/billing-api", "py"),
    ("/home/dev/src/dataviz-ui", "ts"),
    ("/home/dev/work/ingest-pipeline", "py"),
)
PROJECT_WEIGHTS = (0.34, 0.24, 0.18, 0.13, 0.11)

# --- vocabulary ---------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


COMMON = _words("""the to a of and in is it that for this with on be not we i you are as was but have if from at
so can now all an by or it's use should when there what then just do which also will one this more need
make like sure first think see no only here new get let them error test file run check because still
after before both way same any before again fine works working failing fixed""")

TECH = _words("""config session cache index query parse token request response handler server client socket
daemon hook event payload batch commit writer reader store database table column schema migration
vector embedding search result rank score filter scope project path module package import function
class method argument value default option flag timeout retry error exception traceback stack frame
log logger level debug trace metric latency throughput memory buffer queue worker thread process lock
signal shutdown startup state status health ping version build deploy release branch merge rebase
diff patch lint format type annotation async await loop task future callback promise stream pipe
frame header body json yaml toml csv field record row key id uuid hash checksum encode decode serialize
validate sanitize escape quote unicode utf8 ascii korean trigram stem tokenizer fts bm25 cosine
threshold confidence fallback cursor offset limit page sort order group count sum min max window
chunk slice split join merge fixture mock patch assert expect snapshot coverage benchmark profile
component props hook state reducer router route view template render style css layout modal button
form input select dropdown table chart axis legend tooltip color theme dark mode locale i18n cart
checkout order invoice payment refund customer account user auth login logout password permission
role admin tenant subscription plan price currency tax discount coupon webhook stripe email notify
pipeline ingest source sink transform partition shard offset kafka topic consumer producer backfill
schedule cron job dag airflow spark parquet s3 bucket upload download export import archive""")

VERBS = _words("""add remove fix refactor rename move extract inline split merge update bump pin cache flush
reset validate parse load save open close read write send receive retry skip handle raise catch log
render fetch compute sort filter index rebuild migrate check""")
PAST = _words("""fixed removed added renamed moved extracted updated cached flushed reset validated parsed
loaded saved closed retried skipped handled raised caught logged rendered fetched computed sorted
indexed rebuilt migrated""")
ADJ = _words("""stale empty missing duplicated slow flaky broken wrong invalid unused outdated large small
nested optional async blocking unbounded""")
ERRORS_PY = _words("""KeyError ValueError TypeError AttributeError AssertionError RuntimeError IndexError
FileNotFoundError TimeoutError sqlite3.OperationalError ConnectionRefusedError UnicodeDecodeError
ImportError ModuleNotFoundError PermissionError json.JSONDecodeError""")
ERRORS_TS = _words("""TypeError ReferenceError SyntaxError RangeError Error AbortError""")

KOREAN = _words("""검색 서버 데이터베이스 마이그레이션 테스트 오류 에러 설정 캐시 인덱스 메모리 세션 훅 데몬 소켓
요청 응답 타임아웃 프롬프트 토큰 린트 포맷 배포 빌드 성능 속도 로그 파일 함수 클래스 결과 사용자 권한
결제 주문 장바구니 화면 버튼 차트 작업 계획 결정 요약 정리 보안 임베딩 벡터 리팩토링 구현 문서 커밋
브랜치 의존성 패키지 쿼리 스키마 컬럼 이벤트 파이프라인 스케줄 업로드""")
KO_PARTICLES = ("", "", "을", "를", "이", "가", "은", "는", "에서", "의", "도", "으로", "에")
KO_ENDINGS = (
    "확인해 주세요.",
    "고쳐줘.",
    "왜 실패하나요?",
    "추가해줘.",
    "너무 느려요.",
    "정리해 주세요.",
    "설명해줘.",
    "다시 실행해봐.",
    "테스트도 같이 작성해 주세요.",
    "어떻게 생각해?",
)


class Zipf:
    """Draw from ``items`` with probability ~ 1 / rank**s (the first item most often)."""

    def __init__(self, items: Sequence[str], s: float = 1.1) -> None:
        self.items = list(items)
        self.cum = list(accumulate(1.0 / (r**s) for r in range(1, len(self.items) + 1)))
        self.total = self.cum[-1]

    def pick(self, rng: random.Random) -> str:
        return self.items[bisect.bisect_left(self.cum, rng.random() * self.total)]

    def many(self, rng: random.Random, k: int) -> list[str]:
        cum, total, items = self.cum, self.total, self.items
        return [items[bisect.bisect_left(cum, rng.random() * total)] for _ in range(k)]


def _snake(rng: random.Random, parts: int) -> str:
    return "_".join(rng.choice(TECH) for _ in range(parts))


def _camel(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(TECH).capitalize() for _ in range(parts))


class Project(NamedTuple):
    root: str
    name: str
    lang: str
    functions: Zipf
    classes: Zipf
    files: Zipf
    tests: Zipf
    packages: list[str]
    words: Zipf


def _project(index: int, root: str, lang: str, seed: int) -> Project:
    rng = random.Random(f"{seed}:project:{index}")
    name = os.path.basename(root)
    functions = sorted({_snake(rng, rng.choice((2, 2, 3))) for _ in range(2500)}, key=lambda _: rng.random())
    if lang == "ts":
        functions = [f.split("_")[0] + "".join(p.capitalize() for p in f.split("_")[1:]) for f in functions]
    classes = sorted({_camel(rng, rng.choice((2, 2, 3))) for _ in range(600)}, key=lambda _: rng.random())
    pkg = name.replace("-", "_")
    dirs = (
        [f"{pkg}", f"{pkg}/store", f"{pkg}/api", f"{pkg}/core", f"{pkg}/utils", f"{pkg}/cli"]
        if lang == "py"
        else ["src", "src/components", "src/hooks", "src/api", "src/utils", "src/pages"]
    )
    files, tests = [], []
    for _ in range(500):
        stem = _snake(rng, rng.choice((1, 2)))
        if lang == "py":
            files.append(f"{rng.choice(dirs)}/{stem}.py")
            tests.append(f"tests/test_{stem}.py")
        else:
            comp = _camel(rng, 2)
            files.append(f"{rng.choice(dirs)}/{comp}.tsx" if rng.random() < 0.5 else f"{rng.choice(dirs)}/{stem}.ts")
            tests.append(f"src/__tests__/{comp}.test.tsx")
    files += ["README.md", "pyproject.toml" if lang == "py" else "package.json", "CHANGELOG.md"]
    packages = (
        ["httpx", "pydantic", "sqlalchemy", "fastapi", "anyio", "structlog", "msgspec", "numpy", "pytest-asyncio"]
        if lang == "py"
        else ["react", "zod", "vite", "vitest", "d3", "axios", "@tanstack/react-query", "tailwindcss", "eslint"]
    )
    words = list(COMMON) + sorted(set(TECH) | set(VERBS) | set(ADJ), key=lambda _: rng.random())
    return Project(
        root,
        name,
        lang,
        Zipf(functions),
        Zipf(classes),
        Zipf(list(dict.fromkeys(files))),
        Zipf(list(dict.fromkeys(tests))),
        packages,
        Zipf(words, 0.9),
    )


# --- text pieces --------------------------------------------------------------------------------


def _sha(rng: random.Random) -> str:
    return f"{rng.getrandbits(28):07x}"


def _filler(p: Project, rng: random.Random, sentences: int) -> str:
    out = []
    for _ in range(sentences):
        words = p.words.many(rng, rng.randint(6, 18))
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] = f"`{p.functions.pick(rng)}`"
        out.append(" ".join(words).capitalize() + rng.choice((".", ".", ".", "?", ":")))
    return " ".join(out)


def _code_py(p: Project, rng: random.Random, functions: int) -> str:
    lines = [f"from {p.name.replace('-', '_')}.{p.words.pick(rng)} import {p.classes.pick(rng)}", "import logging", ""]
    for _ in range(functions):
        f, arg, var = p.functions.pick(rng), rng.choice(TECH), rng.choice(TECH)
        lines += [
            f"def {f}({arg}: {p.classes.pick(rng)}, {rng.choice(TECH)}: int = {rng.randint(0, 100)}) -> {var.title()}:",
            f'    """{_filler(p, rng, 1)}"""',
            f"    {var} = {arg}.{p.functions.pick(rng)}({rng.choice(TECH)}={rng.choice(('None', 'True', '0'))})",
            f"    if {var} is None:",
            f'        raise {rng.choice(ERRORS_PY[:6])}(f"{rng.choice(ADJ)} {arg}: {{{arg}!r}}")',
            f"    return {p.functions.pick(rng)}({var})",
            "",
        ]
    return "\n".join(lines)


def _code_ts(p: Project, rng: random.Random, functions: int) -> str:
    lines = [f"import {{ {p.classes.pick(rng)} }} from './{p.words.pick(rng)}';", "import React from 'react';", ""]
    for _ in range(functions):
        f, arg, var = p.functions.pick(rng), rng.choice(TECH), rng.choice(TECH)
        lines += [
            f"export function {f}({arg}: {p.classes.pick(rng)}, {rng.choice(TECH)} = {rng.randint(0, 100)}) {{",
            f"  // {_filler(p, rng, 1)}",
            f"  const {var} = {arg}.{p.functions.pick(rng)}();",
            f"  if (!{var}) throw new {rng.choice(ERRORS_TS)}(`{rng.choice(ADJ)} {arg}: ${{{arg}}}`);",
            f"  return {p.functions.pick(rng)}({var});",
            "}",
            "",
        ]
    return "\n".join(lines)


def _code(p: Project, rng: random.Random, functions: int) -> str:
    return _code_py(p, rng, functions) if p.lang == "py" else _code_ts(p, rng, functions)


def _traceback(p: Project, rng: random.Random, error: str) -> str:
    frames = []
    for _ in range(rng.randint(2, 6)):
        frames.append(
            f'  File "{p.root}/{p.files.pick(rng)}", line {rng.randint(5, 900)}, in {p.functions.pick(rng)}\n'
            f"    {rng.choice(TECH)} = {p.functions.pick(rng)}({rng.choice(TECH)})"
        )
    return "Traceback (most recent call last):\n" + "\n".join(frames) + f"\n{error}: {_filler(p, rng, 1)}"


def _korean(p: Project, rng: random.Random, sentences: int) -> str:
    out = []
    for _ in range(sentences):
        words = [rng.choice(KOREAN) + rng.choice(KO_PARTICLES) for _ in range(rng.randint(2, 6))]
        if rng.random() < 0.6:
            words.insert(rng.randrange(len(words) + 1), f"`{p.functions.pick(rng)}`")
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words) + 1), p.files.pick(rng))
        out.append(" ".join(words) + " " + rng.choice(KO_ENDINGS))
    return " ".join(out)


# --- templates ----------------------------------------------------------------------------------

# Local template ids of a project: which kind of event each range is.
KINDS = (
    ("prompt", 140),
    ("assistant", 90),
    ("pytest", 60),
    ("git", 50),
    ("pkg", 30),
    ("lint", 20),
    ("bash_fail", 40),
    ("read", 70),
    ("edit", 50),
    ("write", 15),
    ("grep", 15),
    ("todo", 15),
    ("session", 5),
)
_STARTS = dict(zip([k for k, _ in KINDS], accumulate([0, *[n for _, n in KINDS][:-1]]), strict=True))
_SIZES = dict(KINDS)
assert sum(_SIZES.values()) == TEMPLATES_PER_PROJECT


class Generated(NamedTuple):
    """One generated hook event: what the hook client would send, and where it came from."""

    hook: str
    payload: bytes
    sent_at_ns: int
    root: str
    template: int
    session: str
    korean: bool


_worker: Corpus | None = None
SESSION_CHUNK = 20


def _init_worker(seed: int) -> None:
    global _worker
    _worker = Corpus(seed)


def _sessions(span: tuple[int, int]) -> list[tuple[NewEvent, Generated]]:
    assert _worker is not None
    return _worker.sessions(*span)


class Corpus:
    """The deterministic event stream of ``seed``; see the module docstring."""

    def __init__(self, seed: int = 1) -> None:
        self.seed = seed
        self.projects = [_project(i, root, lang, seed) for i, (root, lang) in enumerate(PROJECTS)]
        self.capture = Capture(CaptureConfig(), Privacy(PrivacyConfig()))
        self._template_pick = {kind: Zipf([str(i) for i in range(n)], 0.9) for kind, n in KINDS}

    # templates -------------------------------------------------------------------------------

    def _template(self, rng: random.Random, project: int, kind: str) -> int:
        local = _STARTS[kind] + int(self._template_pick[kind].pick(rng))
        return project * TEMPLATES_PER_PROJECT + local

    def render(self, template: int, rng: random.Random, korean: bool = False) -> tuple[str, dict[str, Any]]:
        """The hook event and payload fields (without the common ones) of one event of ``template``."""
        p = self.projects[template // TEMPLATES_PER_PROJECT]
        local = template % TEMPLATES_PER_PROJECT
        kind = next(k for k, _ in reversed(KINDS) if local >= _STARTS[k])
        t = random.Random(f"{self.seed}:template:{template}")  # what the template fixes
        return getattr(self, f"_{kind}")(p, t, rng, korean)

    def _prompt(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        f, f2, path, noun, noun2 = (
            p.functions.pick(t),
            p.functions.pick(t),
            p.files.pick(t),
            t.choice(TECH),
            t.choice(TECH),
        )
        if korean:
            head = t.choice(
                (
                    f"{path}에서 `{f}` 함수가 {t.choice(KOREAN)} 오류를 냅니다.",
                    f"`{f}`의 {t.choice(KOREAN)} 속도가 너무 느려요.",
                    f"{t.choice(KOREAN)} 기능을 {path}에 추가해줘.",
                    f"`{f}`와 `{f2}`를 리팩토링하고 테스트를 작성해 주세요.",
                    f"{t.choice(KOREAN)} 설정이 {t.choice(KOREAN)}에서 적용이 안 돼요.",
                )
            )
            return "UserPromptSubmit", {"prompt": head + " " + _korean(p, rng, rng.randint(1, 8))}
        head = t.choice(
            (
                f"Can you fix the failing test in {path}? It says {t.choice(ERRORS_PY)} in {f}.",
                f"Why does {f} return None when the {noun} is empty?",
                f"Add a {noun} option to {f} so that the {noun2} can be {t.choice(PAST)} later.",
                f"Refactor {path} to use {f} instead of {f2}.",
                f"The {noun} is too slow when there are many {noun2}s; profile {f} and make it faster.",
                "Please run the tests and tell me what fails.",
                f"Implement {f} in {path}: it should {t.choice(VERBS)} the {noun} and {t.choice(VERBS)} the {noun2}.",
                f"Let's commit this and move on to the {noun} {noun2}.",
                f"Look at {path} and explain how {f} works.",
                f"Write tests for {f} covering the {t.choice(ADJ)} {noun} case.",
                f"Update the README to document the --{noun}-{noun2} flag.",
                f"I get {t.choice(ERRORS_PY)} from {p.classes.pick(t)}.{f} after the {noun} {t.choice(VERBS)}.",
            )
        )
        body = _filler(p, rng, rng.randint(1, 12))
        if rng.random() < 0.15:
            body += "\n\n```\n" + _traceback(p, rng, t.choice(ERRORS_PY)) + "\n```"
        return "UserPromptSubmit", {"prompt": f"{head} {body}".strip()}

    def _assistant(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        f, path = p.functions.pick(t), p.files.pick(t)
        if korean and rng.random() < 0.5:
            head = f"{path}의 `{f}`를 수정했습니다. " + _korean(p, rng, rng.randint(1, 3))
        else:
            head = t.choice(
                (
                    f"I fixed `{f}` in {path}: the {t.choice(TECH)} was {t.choice(ADJ)} because "
                    f"`{p.functions.pick(t)}` never {t.choice(PAST)} it.",
                    f"Done. `{f}` now {t.choice(VERBS)}s the {t.choice(TECH)} before {t.choice(VERBS)}ing it.",
                    f"The failure comes from {path}: `{f}` expects a {t.choice(TECH)} but gets None.",
                    f"All tests pass. I {t.choice(PAST)} the {t.choice(TECH)} in `{f}` and updated {path}.",
                    f"Here is what I found about `{f}`:",
                )
            )
        bullets = "\n".join(
            f"- {p.files.pick(rng)}: {rng.choice(PAST)} `{p.functions.pick(rng)}` ({_filler(p, rng, 1)})"
            for _ in range(rng.randint(0, 8))
        )
        tail = f"\n\n{rng.randint(2, 400)} passed in {rng.uniform(0.2, 40):.2f}s." if rng.random() < 0.4 else ""
        text = f"{head}\n\n{_filler(p, rng, rng.randint(2, 14))}\n{bullets}{tail}"
        return "Stop", {"stop_hook_active": False, "last_assistant_message": text.strip()}

    @staticmethod
    def _bash(command: str, stdout: str, stderr: str = "", description: str = "") -> tuple[str, dict[str, Any]]:
        inp = {"command": command, **({"description": description} if description else {})}
        out = {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}
        return "PostToolUse", {"tool_name": "Bash", "tool_input": inp, "tool_response": out}

    def _pytest(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        test, f = p.tests.pick(t), p.functions.pick(t)
        if p.lang == "ts":
            failing = rng.random() < 0.5
            out = f" RUN  v1.6.0 {p.root}\n\n"
            out += "\n".join(
                f" {'x' if failing and i == 0 else '✓'} {p.tests.pick(rng)} ({rng.randint(2, 90)} tests) "
                f"{rng.randint(5, 900)}ms"
                for i in range(rng.randint(2, 12))
            )
            if failing:
                out += (
                    f"\n\n FAIL  {test} > {f}\nAssertionError: expected {rng.randint(0, 9)} to be {rng.randint(0, 9)}"
                )
                out += f"\n > {test}:{rng.randint(5, 300)}:{rng.randint(1, 40)}"
            return self._bash(f"npx vitest run {test if t.random() < 0.5 else ''}".strip(), out, "", "Run tests")
        failing = rng.random() < 0.55
        n = rng.randint(3, 400)
        lines = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
            f"rootdir: {p.root}",
            f"collected {n} items",
            "",
        ]
        for _ in range(rng.randint(3, 30)):
            dots = "".join(rng.choice("......F" if failing else ".") for _ in range(rng.randint(3, 40)))
            lines.append(f"{p.tests.pick(rng)} {dots}  [{rng.randint(1, 100):3d}%]")
        if failing:
            err = t.choice(ERRORS_PY)
            lines += [
                "",
                "=================================== FAILURES ===================================",
                f"_____________________________ test_{f} _____________________________",
                "",
                f"    def test_{f}({t.choice(TECH)}):",
                f">       assert {f}({rng.choice(TECH)}) == {rng.randint(0, 99)}",
                f"E       {err}: {_filler(p, rng, 1)}",
                "",
                f"{test}:{rng.randint(5, 500)}: {err}",
                "=========================== short test summary info ============================",
                f"FAILED {test}::test_{f} - {err}",
                f"==================== 1 failed, {n - 1} passed in {rng.uniform(0.3, 60):.2f}s ====================",
            ]
        else:
            lines.append(f"============================== {n} passed in {rng.uniform(0.3, 60):.2f}s ==============")
        command = t.choice(("pytest -q", f"pytest {test}", f"pytest -x {test} -k {f}", "pytest tests/ -x"))
        return self._bash(f".venv/bin/{command}" if t.random() < 0.5 else command, "\n".join(lines))

    def _git(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        what = t.choice(("status", "log", "diff", "commit", "push", "checkout"))
        if what == "status":
            files = "\n".join(f"\tmodified:   {p.files.pick(rng)}" for _ in range(rng.randint(1, 8)))
            out = f"On branch {t.choice(TECH)}-{t.choice(TECH)}\nChanges not staged for commit:\n{files}\n"
            return self._bash("git status", out)
        if what == "log":
            out = "\n".join(
                f"{_sha(rng)} {rng.choice(VERBS).capitalize()} {p.functions.pick(rng)}: {_filler(p, rng, 1)[:60]}"
                for _ in range(rng.randint(3, 30))
            )
            return self._bash(f"git log --oneline -{t.randint(3, 20)}", out)
        if what == "diff":
            out = "\n".join(
                f" {p.files.pick(rng)} | {rng.randint(1, 80)} {'+' * rng.randint(1, 20)}{'-' * rng.randint(0, 9)}"
                for _ in range(rng.randint(1, 10))
            )
            return self._bash("git diff --stat", out + f"\n {rng.randint(1, 10)} files changed")
        if what == "commit":
            msg = f"{t.choice(VERBS).capitalize()} {p.functions.pick(t)}: {_filler(p, rng, 1)[:70]}"
            out = f"[main {_sha(rng)}] {msg}\n {rng.randint(1, 9)} files changed, {rng.randint(1, 300)} insertions(+)"
            return self._bash(f'git add -A && git commit -m "{msg}"', out, "", "Commit the change")
        if what == "push":
            err = f"To github.com:dev/{p.name}.git\n   {_sha(rng)}..{_sha(rng)}  main -> main"
            return self._bash("git push origin main", "", err)
        branch = f"{t.choice(VERBS)}-{t.choice(TECH)}"
        return self._bash(f"git checkout -b {branch}", "", f"Switched to a new branch '{branch}'")

    def _pkg(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        pkg = t.choice(p.packages)
        if p.lang == "py":
            out = "\n".join(
                f"Collecting {d}>={rng.randint(0, 5)}.{rng.randint(0, 30)}\n  Using cached {d}-"
                f"{rng.randint(0, 5)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}-py3-none-any.whl"
                f" ({rng.randint(10, 900)} kB)"
                for d in [pkg, *rng.sample(p.packages, 3)]
            )
            return self._bash(f".venv/bin/pip install {pkg}", out + f"\nSuccessfully installed {pkg}")
        out = (
            f"added {rng.randint(1, 400)} packages, and audited {rng.randint(400, 1500)} packages"
            f" in {rng.randint(1, 40)}s"
            f"\n\n{rng.randint(50, 200)} packages are looking for funding\n  run `npm fund` for details\n\n"
            f"found {rng.choice((0, 0, 1, 3))} vulnerabilities"
        )
        return self._bash(t.choice((f"npm install {pkg}", "npm ci", "npm install")), out)

    def _lint(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        if p.lang == "py":
            rules = ("F401 `os` imported but unused", "E501 Line too long (131 > 120)", "B008 Do not perform calls")
            out = "\n".join(
                f"{p.files.pick(rng)}:{rng.randint(1, 500)}:{rng.randint(1, 80)}: {rng.choice(rules)}"
                for _ in range(rng.randint(0, 12))
            )
            return self._bash("ruff check .", out + f"\nFound {out.count(chr(10)) + 1 if out else 0} errors.")
        out = "\n".join(
            f"{p.files.pick(rng)}({rng.randint(1, 400)},{rng.randint(1, 60)}): error TS2345: Argument of type "
            f"'{rng.choice(TECH)}' is not assignable to parameter of type '{p.classes.pick(rng)}'."
            for _ in range(rng.randint(1, 10))
        )
        return self._bash("npx tsc --noEmit", out)

    def _bash_fail(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        err = t.choice(ERRORS_PY)
        module = p.files.pick(t).removesuffix(".py").replace("/", ".")
        command = t.choice(
            (
                f"python -m {module}",
                f".venv/bin/python -c 'import {module}; {module}.{p.functions.pick(t)}()'",
                f"npm run {t.choice(('build', 'dev', 'test'))}",
                f"make {t.choice(('test', 'build', 'deploy'))}",
            )
        )
        stderr = _traceback(p, rng, err)
        return "PostToolUseFailure", {
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": f"Run {t.choice(TECH)}"},
            "error": f"Exit code {t.choice((1, 1, 2, 127))}\n{stderr}",
            "is_interrupt": False,
        }

    def _read(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        path = p.files.pick(t)
        content = _code(p, random.Random(f"{self.seed}:file:{path}"), 4)  # a file reads the same every time
        n = content.count("\n") + 1 + rng.randint(0, 300)
        file = {"filePath": f"{p.root}/{path}", "content": content, "numLines": n, "startLine": 1, "totalLines": n}
        return "PostToolUse", {
            "tool_name": "Read",
            "tool_input": {"file_path": f"{p.root}/{path}"},
            "tool_response": {"type": "text", "file": file},
        }

    def _edit(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        path = p.files.pick(t)
        old = _code(p, random.Random(f"{self.seed}:edit:{t.random()}"), 1).split("\n", 3)[-1]
        new = old.replace(t.choice(TECH), rng.choice(TECH)) + f"\n    # {_filler(p, rng, 1)}"
        return "PostToolUse", {
            "tool_name": "Edit",
            "tool_input": {"file_path": f"{p.root}/{path}", "old_string": old, "new_string": new},
            "tool_response": {"filePath": f"{p.root}/{path}", "oldString": old, "newString": new},
        }

    def _write(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        path = p.files.pick(t)
        content = _code(p, rng, rng.randint(2, 6))
        return "PostToolUse", {
            "tool_name": "Write",
            "tool_input": {"file_path": f"{p.root}/{path}", "content": content},
            "tool_response": {"type": t.choice(("create", "update")), "filePath": f"{p.root}/{path}"},
        }

    def _grep(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        files = sorted({p.files.pick(rng) for _ in range(rng.randint(0, 25))})
        if t.random() < 0.6:
            pattern = p.functions.pick(t)
            inp = {"pattern": pattern, "path": p.root, "output_mode": "files_with_matches"}
            res = {"mode": "files_with_matches", "filenames": files, "numFiles": len(files)}
            return "PostToolUse", {"tool_name": "Grep", "tool_input": inp, "tool_response": res}
        pattern = f"**/*{t.choice(TECH)}*.{'py' if p.lang == 'py' else 'ts*'}"
        res = {"filenames": [f"{p.root}/{f}" for f in files], "numFiles": len(files), "truncated": False}
        return "PostToolUse", {"tool_name": "Glob", "tool_input": {"pattern": pattern}, "tool_response": res}

    def _todo(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        if t.random() < 0.6:
            todos = [
                {
                    "content": f"{rng.choice(VERBS).capitalize()} {p.functions.pick(rng)} in {p.files.pick(rng)}",
                    "status": rng.choice(("pending", "in_progress", "completed")),
                    "activeForm": f"{rng.choice(VERBS).capitalize()}ing {p.functions.pick(rng)}",
                }
                for _ in range(rng.randint(2, 8))
            ]
            return "PostToolUse", {
                "tool_name": "TodoWrite",
                "tool_input": {"todos": todos},
                "tool_response": {"oldTodos": [], "newTodos": todos},
            }
        inp = {"taskId": str(rng.randint(1, 40)), "status": rng.choice(("in_progress", "completed"))}
        task = {"id": inp["taskId"], "subject": f"{t.choice(VERBS).capitalize()} {p.functions.pick(t)}"}
        return "PostToolUse", {"tool_name": "TaskUpdate", "tool_input": inp, "tool_response": {"task": task}}

    def _session(self, p: Project, t: random.Random, rng: random.Random, korean: bool) -> tuple[str, dict[str, Any]]:
        return "SessionStart", {"source": "startup", "model": "claude-sonnet-4-5-20250929"}

    # the stream ------------------------------------------------------------------------------

    def _session_events(self, index: int) -> Iterator[Generated]:
        rng = random.Random(f"{self.seed}:session:{index}")
        project = rng.choices(range(len(self.projects)), weights=PROJECT_WEIGHTS)[0]
        p = self.projects[project]
        korean = rng.random() < 0.05
        session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        base = {
            "session_id": session,
            "transcript_path": f"/home/dev/.claude/projects/{p.root.replace('/', '-')}/{session}.jsonl",
            "cwd": p.root,
        }
        ts = END_TS - 200 * 86400 + index * SESSION_GAP + rng.uniform(0, 600)
        seq = 0

        def emit(hook: str, fields: dict[str, Any], template: int) -> Generated:
            nonlocal ts, seq
            seq += 1
            ts += rng.uniform(2, 60)
            payload = {**base, "hook_event_name": hook, **fields}
            if hook in ("PostToolUse", "PostToolUseFailure"):
                payload["tool_use_id"] = f"toolu_{self.seed:02d}{index:07d}{seq:05d}"
            elif hook in ("UserPromptSubmit", "Stop"):
                payload["prompt_id"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
            return Generated(hook, data, int(ts * 1e9), p.root, template, session, korean)

        start = self._template(rng, project, "session")
        yield emit("SessionStart", {"source": rng.choice(("startup", "startup", "resume", "clear"))}, start)
        tools = ("pytest", "git", "pkg", "lint", "bash_fail", "read", "edit", "write", "grep", "todo")
        weights = (10, 7, 2, 3, 4, 20, 14, 3, 6, 4)
        for _ in range(rng.randint(1, 12)):
            template = self._template(rng, project, "prompt")
            yield emit(*self.render(template, rng, korean), template)
            for _ in range(rng.randint(2, 14)):
                template = self._template(rng, project, rng.choices(tools, weights=weights)[0])
                yield emit(*self.render(template, rng, korean), template)
            template = self._template(rng, project, "assistant")
            yield emit(*self.render(template, rng, korean), template)
        reason = rng.choice(("exit", "clear", "logout", "prompt_input_exit", "other"))
        yield emit("SessionEnd", {"reason": reason}, start)

    def stream(self, n: int) -> Iterator[Generated]:
        """The first ``n`` hook events of the corpus."""
        count, index = 0, 0
        while count < n:
            for item in self._session_events(index):
                yield item
                count += 1
                if count >= n:
                    return
            index += 1

    def prepare(self, item: Generated) -> NewEvent:
        event = self.capture.prepare(
            Ingest(event=item.hook, sent_at_ns=item.sent_at_ns, payload=item.payload), item.sent_at_ns / 1e9
        )
        assert not isinstance(event, Skipped), event
        return event

    def sessions(self, start: int, stop: int) -> list[tuple[NewEvent, Generated]]:
        """Every event of sessions ``start`` to ``stop`` (excluded), prepared."""
        return [(self.prepare(item), item) for index in range(start, stop) for item in self._session_events(index)]

    def events(self, n: int, workers: int = 0) -> Iterator[tuple[NewEvent, Generated]]:
        """The first ``n`` events as the daemon would store them (``NewEvent``), with their origin.

        ``workers`` > 0 generates them in that many processes (same events, same order).
        """
        if workers <= 0:
            for item in self.stream(n):
                yield self.prepare(item), item
            return
        ctx = multiprocessing.get_context("fork")
        count = 0
        with ctx.Pool(workers, initializer=_init_worker, initargs=(self.seed,)) as pool:
            # In waves of a few chunks: imap over an endless range would queue up every
            # result the workers get ahead with (gigabytes at 1M events).
            for wave in itertools.count(0, SESSION_CHUNK * 4 * workers):
                spans = [
                    (at, at + SESSION_CHUNK) for at in range(wave, wave + SESSION_CHUNK * 4 * workers, SESSION_CHUNK)
                ]
                for chunk in pool.imap(_sessions, spans):
                    for pair in chunk:
                        yield pair
                        count += 1
                        if count >= n:
                            pool.terminate()
                            return

    def canonical_texts(self) -> list[str]:
        """Per template: the first text the indexer would embed for its canonical event."""
        texts = []
        for template in range(len(self.projects) * TEMPLATES_PER_PROJECT):
            rng = random.Random(f"{self.seed}:canonical:{template}")
            hook, fields = self.render(template, rng)
            if hook == "SessionStart":
                fields = {"source": "startup"}
            p = self.projects[template // TEMPLATES_PER_PROJECT]
            payload = {"session_id": "canonical", "cwd": p.root, "hook_event_name": hook, **fields}
            event = self.prepare(Generated(hook, json.dumps(payload).encode(), int(END_TS * 1e9), p.root, 0, "", False))
            texts.append((event_vectors(event.title, event.text, event.kind) or [event.title])[0])
        return texts


# --- vectors and databases ----------------------------------------------------------------------


def template_vectors(corpus: Corpus, cache_dir: str, models_dir: str, log: Callable[[str], None] = print) -> np.ndarray:
    """The real embeddings of every template's canonical text (cached as .npy under ``cache_dir``)."""
    path = os.path.join(cache_dir, f"templates-v{GENERATOR_VERSION}-seed{corpus.seed}.npy")
    if os.path.exists(path):
        return np.load(path)
    from memd.services.embed import Embedder

    embedder = Embedder(EmbeddingConfig(), models_dir)
    embedder.load()
    texts = corpus.canonical_texts()
    started = time.perf_counter()
    parts = []
    for at in range(0, len(texts), 256):
        parts.append(embedder.embed(texts[at : at + 256]))
        log(f"  embedded {min(at + 256, len(texts))}/{len(texts)} template texts")
    vectors = np.concatenate(parts).astype(np.float32)
    log(f"  {len(texts)} template texts embedded in {time.perf_counter() - started:.1f} s")
    os.makedirs(cache_dir, exist_ok=True)
    np.save(path + ".tmp.npy", vectors)
    os.replace(path + ".tmp.npy", path)
    return vectors


def event_vectors(title: str, text: str, kind: str) -> list[str]:
    """The texts the indexer embeds for one event (one vector each)."""
    from memd.retrieve.windows import event_windows

    return event_windows(title, text, kind)


def schema_key() -> str:
    """A short hash of the schema: a cached database of another schema is not reused."""
    return hashlib.sha256("".join(m.sql for m in MIGRATIONS).encode()).hexdigest()[:8]


class BuildStats(NamedTuple):
    events: int
    insert_seconds: float
    """In ``write_batch`` (SQL and triggers)."""
    events_seconds: float
    """Generating, capturing and inserting the events (with the insert time)."""
    vector_seconds: float
    vectors: int


def build_database(
    path: str,
    n: int,
    *,
    seed: int = 1,
    templates: np.ndarray | None = None,
    embedding_version: str = "",
    cjk: bool = True,
    workers: int = 2,
    log: Callable[[str], None] = print,
) -> BuildStats:
    """Write the first ``n`` corpus events into a new database at ``path`` with ``write_batch``.

    ``templates`` (from ``template_vectors``) and ``embedding_version`` (``Embedder.version``)
    given: every event also gets its synthetic vectors (module docstring) and its outbox row
    is marked done.  ``cjk=False`` drops the trigram trigger first (to measure what it costs).
    Insert time counts ``write_batch`` only (triggers included), not generating the events.
    """
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    corpus = Corpus(seed)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    migrate(conn)
    if not cjk:
        conn.execute("DROP TRIGGER events_cjk_insert")  # (the writer still computes the cjk flag)
    insert = 0.0
    written = 0
    origin: list[tuple[int, int, int]] = []  # (event id, template, windows)
    first_template: dict[str, int] = {}
    batch: list[tuple[NewEvent, str | None]] = []
    items: list[Generated] = []
    started = time.perf_counter()

    def flush() -> None:
        nonlocal insert, written
        ends = frozenset(e.session_id for e, _ in batch if e.event == "SessionEnd" and e.session_id)
        t0 = time.perf_counter()
        results = write_batch(conn, batch, [], ends)
        insert += time.perf_counter() - t0
        written += len(batch)
        if templates is not None:
            for (event, _), item, result in zip(batch, items, results, strict=True):
                count = len(event_vectors(event.title, event.text, event.kind))
                origin.append((result.event_id, item.template, count))
                first_template.setdefault(item.session, item.template)
        batch.clear()
        items.clear()

    for event, item in corpus.events(n, workers):
        batch.append((event, item.root))
        items.append(item)
        if len(batch) >= BATCH:
            flush()
            if written % (BATCH * 10) == 0 or written == n:
                log(f"  {os.path.basename(path)}: {written}/{n} events, {time.perf_counter() - started:.0f} s")
    if batch:
        flush()
    events_seconds = time.perf_counter() - started
    vector_seconds, vectors = 0.0, 0
    if templates is not None:
        t0 = time.perf_counter()
        vectors = _store_vectors(conn, origin, first_template, templates, embedding_version, seed, log)
        vector_seconds = time.perf_counter() - t0
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return BuildStats(n, insert, events_seconds, vector_seconds, vectors)


def _store_vectors(
    conn: sqlite3.Connection,
    origin: list[tuple[int, int, int]],
    first_template: dict[str, int],
    templates: np.ndarray,
    version: str,
    seed: int,
    log: Callable[[str], None],
) -> int:
    """Synthetic vectors for every event (summaries: their session's first template), outbox done."""
    summaries = conn.execute("SELECT id, session_id, title, text FROM events WHERE kind = 'session_summary'").fetchall()
    origin = origin + [
        (event_id, first_template.get(session, 0), len(event_vectors(title, text, "session_summary")))
        for event_id, session, title, text in summaries
    ]
    rng = np.random.default_rng(seed)
    rows = [(event_id, chunk, template) for event_id, template, count in origin for chunk in range(max(count, 1))]
    total = 0
    for at in range(0, len(rows), 50_000):
        part = rows[at : at + 50_000]
        base = templates[[template for _, _, template in part]]
        noisy = base + rng.standard_normal(base.shape, dtype=np.float32) * NOISE
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO vectors (event_id, chunk, vector) VALUES (?, ?, ?)",
            [(event_id, chunk, encode(vector)) for (event_id, chunk, _), vector in zip(part, noisy, strict=True)],
        )
        conn.execute("COMMIT")
        total += len(part)
        log(f"  {total}/{len(rows)} vectors stored")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE vector_outbox SET state = 'done'")
    conn.execute("INSERT OR REPLACE INTO embedding_version (id, version) VALUES (1, ?)", (version,))
    conn.execute("COMMIT")
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="database file to create (replaced if it exists)")
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-vectors", action="store_true", help="leave the outbox pending, store no vectors")
    parser.add_argument("--no-cjk", action="store_true", help="without the trigram index rows")
    parser.add_argument("--cache", default="/tmp/memd-bench-corpus", help="template vectors and the model")
    args = parser.parse_args()
    templates, version = None, ""
    if not args.no_vectors:
        import memd.services.embed  # fastembed before anything imports usearch

        corpus = Corpus(args.seed)
        templates = template_vectors(corpus, args.cache, os.path.join(args.cache, "models"))
        version = memd.services.embed.Embedder(EmbeddingConfig(), os.path.join(args.cache, "models")).version
    stats = build_database(
        args.out, args.events, seed=args.seed, templates=templates, embedding_version=version, cjk=not args.no_cjk
    )
    print(stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
