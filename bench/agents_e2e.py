"""What memd adds to a headless run of Codex CLI and of Gemini CLI, against the same runs without it.

For each agent, ``--sessions`` scripted sessions (a prompt with a shell call; every fifth
resumes the latest session), each run twice back to back (who goes first alternates): once
by a user with memd installed as ``memctl install --agent`` installs it, once by a user
without memd.  Both carry the same recorder hook on the same events (the tests' harness:
``tests/e2e/codex.py``, ``tests/e2e/gemini.py``), against the tests' fakes of the agents'
APIs, so the difference in wall time is memd's alone.  The recorder's files are what the
agent fired, against which memd's store is checked (lost, duplicated).

    .venv/bin/python bench/agents_e2e.py [--sessions 30] [--agents codex,gemini] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from conftest import Instance  # noqa: E402  (the tests' isolated daemon)
from e2e import codex, gemini  # noqa: E402
from e2e.fake_gemini import FakeGemini  # noqa: E402
from e2e.fake_openai import FakeOpenAI  # noqa: E402
from e2e.install_clis import install  # noqa: E402

TARGET_OVERHEAD_MS = 150.0


def measure(agent: str, sessions: int, memd: Instance, root: Path) -> dict[str, object]:
    binary = install(agent)
    fake = FakeOpenAI() if agent == "codex" else FakeGemini()
    kind = codex.CodexUser if agent == "codex" else gemini.GeminiUser
    module = codex if agent == "codex" else gemini
    with fake:
        users = {
            "memd": kind(binary, fake.url, memd, root / f"{agent}-memd"),
            "none": kind(binary, fake.url, memd, root / f"{agent}-none", with_memd=False),
        }
        seconds: dict[str, list[float]] = {name: [] for name in users}
        for n in range(sessions):
            order = ["memd", "none"] if n % 2 else ["none", "memd"]
            for name in order:
                prompt = f"bench session {n}\n@bash echo bench-{n}\n@say done {n}"
                _answer, took = users[name].run(prompt, resume=n % 5 == 4)
                seconds[name].append(took)
        memd.wait_for(lambda: not memd.spooled(), timeout=60)
        want, have = module.fired(users["memd"]), module.stored(memd)
    with_memd, without = statistics.median(seconds["memd"]), statistics.median(seconds["none"])
    overhead_ms = (with_memd - without) * 1000
    return {
        "agent": agent,
        "sessions": sessions,
        "events_fired": sum(want.values()),
        "lost": sum((want - have).values()),
        "duplicated": sum((have - want).values()),
        "none_median_s": round(without, 3),
        "memd_median_s": round(with_memd, 3),
        "overhead_median_ms": round(overhead_ms, 1),
        "met": overhead_ms <= TARGET_OVERHEAD_MS and want == have,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--agents", default="codex,gemini")
    parser.add_argument("--json", action="store_true", help="print one JSON object per agent")
    args = parser.parse_args()
    memd = Instance(tempfile.mkdtemp(prefix="memd-bench-agents-", dir="/tmp"))
    memd.start()
    try:
        results = [measure(agent, args.sessions, memd, Path(memd.root)) for agent in args.agents.split(",")]
    finally:
        memd.stop()
        shutil.rmtree(memd.root, ignore_errors=True)
    for result in results:
        if args.json:
            print(json.dumps(result))
        else:
            print("  ".join(f"{key} {value}" for key, value in result.items()))
    return 0 if all(r["met"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
