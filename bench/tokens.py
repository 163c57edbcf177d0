"""How close ``memd.tokens.estimate_tokens`` is to a real Claude tokenizer, per kind of text, and how fast.

The reference is the tokenizer older versions of the ``anthropic`` SDK shipped as
``anthropic/tokenizer.json`` (byte-level BPE, 65k vocabulary: the Claude 2-era tokenizer). The tokenizer
of today's models is not public, so the numbers say how close the estimate is to *a* Claude tokenizer,
which approximates the current one. The file is not in the repository and memd does not depend on
``anthropic``; get it from a wheel that ships it and load it with ``tokenizers`` (in the venv through
fastembed):

    .venv/bin/pip download anthropic==0.34.2 --no-deps -d /tmp/anth
    unzip -o /tmp/anth/anthropic-0.34.2-py3-none-any.whl anthropic/tokenizer.json -d /tmp/anth
    .venv/bin/python bench/tokens.py --tokenizer /tmp/anth/anthropic/tokenizer.json [--worst 5]

The corpus, one text per sample:

- prose: user prompts, assistant text and thinking, WebFetch and subagent results, a written plan, from
  the real transcripts in ``../shared/fixtures/claude-code/transcripts/``;
- code: the transcripts' Read results (with Claude Code's line-number gutter) and every ``memd/**/*.py``
  file as it is on disk;
- shell: the transcripts' Bash commands and outputs, plus the typical outputs in ``SHELL`` below
  (pytest, git, ls, a traceback, pip, docker: written for this bench, not captured);
- paths: the transcripts' Glob results and the list of this repository's files;
- json: Claude Code's hook payloads (``../shared/fixtures/claude-code/hooks/*.json``), the transcripts'
  tool inputs as JSON and WebSearch results (JSON link lists);
- memory: the English memories of the golden sets (``../shared/fixtures/golden/*.json``);
- korean: the golden sets' Korean queries and the sentences in ``KOREAN`` below (written for this
  bench: the fixtures hold only two short Korean queries);
- cjk: the Japanese and Chinese sentences in ``CJK`` below (written for this bench).

For each kind: the total ratio estimate/real over all its texts, and the median, p10 and p90 (nearest
rank) of the per-text ratio. The estimator is meant to err high: every kind's total ratio within
``[1.00, 1.15]``; the script exits 1 when one is not. A second table shows synthetic edge cases (base64,
hashes, minified JS, German...) that are not held to the band. Then the speed, best of 20 runs:
``estimate_tokens`` over all the texts joined (about 0.4 MB) and over 100 KB of code, in microseconds
per 1000 characters; one call on a 100-character sentence; ``truncate_to_tokens`` of the 100 KB to
2000 tokens (the SessionStart budget).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import re
import time
from collections.abc import Callable
from pathlib import Path

from harness import markdown_table

from memd.metrics import percentile
from memd.tokens import estimate_tokens, truncate_to_tokens

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO.parent / "shared" / "fixtures"
BAND = (1.00, 1.15)
HANGUL = re.compile("[\uac00-\ud7a3]")
#: The tool whose result is what kind of text; a result of any other tool is prose.
RESULT_KIND = {"Read": "code", "Bash": "shell", "Glob": "paths", "WebSearch": "json"}

KOREAN = (
    "검색 결과가 비어 있으면 트라이그램 인덱스를 다시 빌드해야 한다.",
    "pytest를 돌렸더니 test_store.py에서 세 개가 실패했어. 그거 고쳐줘",
    "데몬이 시작할 때 임베딩 모델을 미리 로드하지 않도록 바꿨다. 첫 검색이 2초쯤 느려지는 대신 메모리를 아낀다.",
    "다음 단계는 골든 세트로 재순위(rerank)를 튜닝하기 전에 기준 점수를 기록하는 것이다.",
    "설정 파일 경로는 ~/.config/memd/config.toml 이고, 파일이 없으면 기본값을 쓴다.",
    "한국어 질문은 조사를 떼고 어간만 남겨서 검색한다: 검색을 → 검색, 서버에서는 → 서버.",
    "사용자가 <private> 태그로 감싼 부분은 저장하기 전에 [PRIVATE]로 바꾼다.",
    "훅 클라이언트는 데몬이 응답하지 않으면 이벤트를 스풀 디렉터리에 파일로 남기고 바로 종료한다.",
    "어제 배포한 버전에서 로그인 후 대시보드가 안 뜨는 버그가 있었는데, "
    "세션 토큰 만료 시간을 잘못 계산한 게 원인이었다.",
    "응 다음 단계 진행해줘. 테스트는 전부 통과했어?",
    "컨텍스트에 넣을 기억은 토큰 예산 안에서 점수가 높은 순서대로 고른다.",
    "마이그레이션 스크립트를 실행하기 전에 데이터베이스를 백업해 두자.",
    "이 함수는 입력 문자열을 줄 단위로 나누고, 빈 줄은 건너뛴다.",
    "리뷰 의견: 예외를 삼키지 말고 로그를 남긴 다음 다시 던지는 게 좋겠습니다.",
    "왜 CI에서만 타임아웃이 나지? 로컬에서는 10초 안에 끝나는데.",
    "벡터 인덱스 파일이 손상되면 이벤트 테이블에서 다시 만들 수 있다.",
    "## 결정\n- 저장소: SQLite (WAL 모드)\n- 검색: FTS5 + 트라이그램 + 벡터\n"
    "- 이유: 설치가 간단하고 외부 서버가 필요 없음\n",
    "지난번에 말한 그 캐시 문제, 아직 해결 안 됐어? 재시작하면 잠깐 괜찮다가 다시 느려져.",
)
CJK = (
    "検索結果が空の場合は、インデックスを再構築してください。",
    "テストを実行したところ、3件失敗しました。ログを確認します。",
    "このクラスは設定ファイルを読み込み、足りない値をデフォルト値で補います。",
    "デーモンが起動しない場合は、ソケットのパスと権限を確認してください。",
    "次のステップ：ゴールデンセットで評価してから、リランキングを調整する。",  # noqa: RUF001
    "这个函数把输入按行拆分，并跳过空行。",  # noqa: RUF001
    "部署之后登录页面一直转圈，原因是会话令牌的过期时间算错了。",  # noqa: RUF001
    "请先备份数据库，再运行迁移脚本。",  # noqa: RUF001
    "搜索结果为空时，需要重建三元组索引。",  # noqa: RUF001
    "我们选择 SQLite 作为存储，因为它不需要单独的服务器。",  # noqa: RUF001
)
SHELL = (
    """============================= test session starts ==============================
platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0
rootdir: /home/dev/projects/memd
configfile: pyproject.toml
plugins: hypothesis-6.112.1, anyio-4.6.0
collected 214 items

tests/test_capture.py ........................................           [ 18%]
tests/test_query.py .............F......................                 [ 35%]
tests/test_store.py ..........................s..........................  [ 60%]

=================================== FAILURES ===================================
_____________________________ test_korean_stem[검색을] _____________________________

    def test_korean_stem(word):
>       assert stem(word) == "검색"
E       AssertionError: assert '검색을' == '검색'

tests/test_query.py:88: AssertionError
=========================== short test summary info ============================
FAILED tests/test_query.py::test_korean_stem[검색을] - AssertionError: assert '검색을' == '검색'
=================== 1 failed, 212 passed, 1 skipped in 4.27s ===================
""",
    """On branch main
Your branch is ahead of 'origin/main' by 2 commits.
  (use "git push" to publish your local commits)

Changes not staged for commit:
  (use "git add <file>..." to update what will be committed)
  (use "git restore <file>..." to discard changes in working directory)
\tmodified:   memd/retrieve/rank.py
\tmodified:   tests/test_rank.py

Untracked files:
  (use "git add <file>..." to include in what will be committed)
\tbench/tokens.py

no changes added to commit (use "git add" and/or "git commit -a")
""",
    """11399ae BENCHMARKS: say which runs had company
784c724 bench: the RSS part seeds an isolated_daemon instead of copying its set-up
b5f0c10 search: mode 'none' when nothing was searched
48eb585 rank: unit tests; a stale marker must open the text
66bd775 BENCHMARKS: 1M search, hook latency with the embedding worker
""",
    """total 148
drwxr-xr-x  9 dev dev  4096 Nov 21 20:05 .
drwxr-xr-x 14 dev dev  4096 Nov 20 09:12 ..
-rw-r--r--  1 dev dev  1874 Nov 21 19:58 BENCHMARKS.md
drwxr-xr-x  2 dev dev  4096 Nov 21 20:01 bench
drwxr-xr-x  8 dev dev  4096 Nov 21 20:05 .git
-rw-r--r--  1 dev dev   412 Nov 18 11:30 .gitignore
drwxr-xr-x  6 dev dev  4096 Nov 21 19:40 memd
-rw-r--r--  1 dev dev  1529 Nov 21 16:22 pyproject.toml
-rw-r--r--  1 dev dev  6120 Nov 21 17:03 README.md
drwxr-xr-x  3 dev dev  4096 Nov 21 19:58 tests
""",
    """Traceback (most recent call last):
  File "/home/dev/projects/memd/memd/daemon.py", line 212, in main
    anyio.run(serve, config)
  File "/home/dev/projects/memd/.venv/lib/python3.11/site-packages/anyio/_core/_eventloop.py", line 74, in run
    return async_backend.run(func, args, {}, backend_options)
  File "/home/dev/projects/memd/memd/server.py", line 88, in serve
    listener = await anyio.create_unix_listener(paths.socket)
OSError: [Errno 98] Address already in use: '/run/user/1000/memd/memd.sock'
""",
    """Collecting usearch>=2.12
  Downloading usearch-2.15.3-cp311-cp311-manylinux_2_28_x86_64.whl.metadata (31 kB)
Collecting numpy>=1.24
  Using cached numpy-2.1.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl (16.3 MB)
Installing collected packages: numpy, usearch
Successfully installed numpy-2.1.3 usearch-2.15.3
""",
    """CONTAINER ID   IMAGE            COMMAND                  CREATED       STATUS                 PORTS         NAMES
3f2a9c1b7d44   postgres:16      "docker-entrypoint.s…"   2 hours ago   Up 2 hours (healthy)   5432/tcp      app-db-1
a81e0c55f2b9   redis:7-alpine   "docker-entrypoint.s…"   2 hours ago   Up 2 hours             6379/tcp      app-cache-1
""",
    """memd/tokens.py:41:5: F841 Local variable `cost` is assigned to but never used
memd/tokens.py:88:121: E501 Line too long (124 > 120)
Found 2 errors.
No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).
""",
    """2026-11-21T20:05:14.201Z INFO  request id=5f0c2d1e-8b7a-4c1e-9a3f-2e6d4b8c0a11 path=/api/v1/items status=200
2026-11-21T20:05:14.388Z WARN  retrying https://api.example.com/v2/jobs/7d3e after 429 (attempt 2/5)
2026-11-21T20:05:15.002Z ERROR job 7d3e failed: connection reset by peer
""",
)


def _add(corpus: dict[str, list[str]], kind: str, text: str) -> None:
    if text.strip():
        corpus.setdefault(kind, []).append(text)


def _transcripts(corpus: dict[str, list[str]]) -> None:
    tool_names: dict[str, str] = {}
    for path in sorted((FIXTURES / "claude-code" / "transcripts").glob("**/*.jsonl")):
        for line in path.read_text().splitlines():
            message = json.loads(line).get("message")
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            if isinstance(content, str):
                _add(corpus, "prose", content)
                continue
            for block in content or []:
                kind = block.get("type")
                if kind == "text":
                    _add(corpus, "prose", block["text"])
                elif kind == "thinking":
                    _add(corpus, "prose", block.get("thinking", ""))
                elif kind == "tool_use":
                    tool_names[block["id"]] = block["name"]
                    _add(corpus, "json", json.dumps(block["input"], ensure_ascii=False))
                    if block["name"] == "Bash":
                        _add(corpus, "shell", block["input"]["command"])
                    elif block["name"] == "Write":
                        _add(corpus, "prose", block["input"]["content"])
                elif kind == "tool_result":
                    result = block["content"]
                    if not isinstance(result, str):
                        result = "\n".join(part.get("text", "") for part in result)
                    _add(corpus, RESULT_KIND.get(tool_names.get(block["tool_use_id"], ""), "prose"), result)


def build_corpus() -> dict[str, list[str]]:
    """Kind of text → its texts (see the module doc)."""
    corpus: dict[str, list[str]] = {}
    _transcripts(corpus)
    for path in sorted((FIXTURES / "claude-code" / "hooks").glob("*.json")):
        _add(corpus, "json", path.read_text())
    for path in sorted((FIXTURES / "golden").glob("*.json")):
        golden = json.loads(path.read_text())
        for memory in golden["memories"]:
            _add(corpus, "korean" if HANGUL.search(memory["content"]) else "memory", memory["content"])
        for query in golden["queries"]:
            if HANGUL.search(query["query"]):
                _add(corpus, "korean", query["query"])
    sources = sorted((REPO / "memd").glob("**/*.py"))
    for path in sources:
        _add(corpus, "code", path.read_text())
    listing = sorted(str(p.relative_to(REPO)) for d in ("memd", "tests", "bench") for p in (REPO / d).glob("**/*.py"))
    _add(corpus, "paths", "\n".join(listing))
    for text in SHELL:
        _add(corpus, "shell", text)
    for text in KOREAN:
        _add(corpus, "korean", text)
    for text in CJK:
        _add(corpus, "cjk", text)
    return corpus


def best_seconds(call: Callable[[], object], runs: int = 20) -> float:
    """The fastest of ``runs`` calls, in seconds: the least disturbed by the rest of the machine."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def speed_lines(corpus: dict[str, list[str]]) -> list[str]:
    everything = "\n".join(text for texts in corpus.values() for text in texts)
    code = "\n".join(corpus["code"])[:100_000]
    sentence = "Search falls back to keywords while the embedding model loads, then ranks by recency and score."
    per_kb = [
        (f"all texts joined, {len(everything) / 1000:.0f} K chars", everything),
        (f"code, {len(code) / 1000:.0f} K chars", code),
    ]
    lines = []
    for label, text in per_kb:
        us_per_kb = best_seconds(lambda t=text: estimate_tokens(t)) * 1e6 / (len(text) / 1000)
        lines.append(f"estimate_tokens, {label}: {us_per_kb:.1f} µs/KB")
    lines.append(
        f"estimate_tokens, one {len(sentence)}-char sentence: "
        f"{best_seconds(lambda: estimate_tokens(sentence), 2000) * 1e6:.1f} µs per call"
    )
    lines.append(
        f"truncate_to_tokens, 100 K chars of code to 2000 tokens: "
        f"{best_seconds(lambda: truncate_to_tokens(code, 2000)) * 1e3:.2f} ms"
    )
    return lines


def edge_cases() -> dict[str, str]:
    """Synthetic texts outside the corpus' kinds, where the estimate is known to be weaker."""
    rng = random.Random(20261121)
    return {
        "base64, 4 KB": base64.b64encode(rng.randbytes(3000)).decode(),
        "sha256 lines": "\n".join(f"{hashlib.sha256(str(i).encode()).hexdigest()}  file{i}.txt" for i in range(20)),
        "UUIDs": " ".join(f"{rng.getrandbits(128):032x}" for _ in range(30)),
        "minified JS": "function(e,t){var n=e.length,r=[];for(var i=0;i<n;i++){if(t(e[i]))r.push(e[i])}return r}" * 10,
        "URL with a query": "https://example.com/api/v2/search?q=memory+daemon&page=2&per_page=50&sort=updated",
        "Markdown table": "| name | value |\n|------|-------|\n| alpha | 1 |\n| beta | 22 |\n" * 5,
        "9-digit numbers": " ".join(str(rng.randrange(10**9)) for _ in range(50)),
        "camelCase identifiers": "getElementById querySelectorAll addEventListener XMLHttpRequest " * 5,
        "German": "Die Datenbankverbindung konnte nicht hergestellt werden, weil die Zugangsdaten ungültig sind.",
        "Russian": "Привет, мир! Это тестовая строка для проверки токенизатора.",
        "emoji": "✅ done 🚀 shipped 🎉 party 👍",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", required=True, help="path to anthropic/tokenizer.json")
    parser.add_argument("--worst", type=int, default=0, help="show the N texts of each kind with the lowest ratio")
    args = parser.parse_args()

    from tokenizers import Tokenizer  # only the bench needs it

    tokenizer = Tokenizer.from_file(args.tokenizer)
    corpus = build_corpus()
    rows = []
    failed = []
    for kind, texts in corpus.items():
        real = [len(tokenizer.encode(text).ids) for text in texts]
        estimated = [estimate_tokens(text) for text in texts]
        ratios = sorted(e / r for e, r in zip(estimated, real, strict=True))
        total = sum(estimated) / sum(real)
        if not BAND[0] <= total <= BAND[1]:
            failed.append(kind)
        rows.append(
            (
                kind,
                len(texts),
                f"{sum(map(len, texts)):,}",
                f"{sum(real):,}",
                f"{sum(map(len, texts)) / sum(real):.2f}",
                f"{total:.3f}",
                f"{percentile(ratios, 0.5):.2f}",
                f"{percentile(ratios, 0.1):.2f}",
                f"{percentile(ratios, 0.9):.2f}",
            )
        )
        if args.worst:
            pairs = sorted(zip(estimated, real, texts, strict=True), key=lambda p: p[0] / p[1])
            for est, rea, text in pairs[: args.worst]:
                print(f"  {kind}: {est}/{rea} = {est / rea:.2f}  {text[:100]!r}")
    headers = ("kind", "texts", "chars", "real tokens", "chars/token", "total est/real", "median", "p10", "p90")
    print(markdown_table(headers, rows))

    edge_rows = []
    for name, text in edge_cases().items():
        real, estimated = len(tokenizer.encode(text).ids), estimate_tokens(text)
        edge_rows.append((name, f"{len(text):,}", real, estimated, f"{estimated / real:.2f}"))
    print("\nEdge cases (synthetic, not held to the band):\n")
    print(markdown_table(("text", "chars", "real tokens", "estimate", "est/real"), edge_rows))

    print()
    print("\n".join(speed_lines(corpus)))
    lo, hi = BAND
    verdict = f"MISSED by {', '.join(failed)}" if failed else "met"
    print(f"target: every kind's total ratio in [{lo:.2f}, {hi:.2f}]: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
