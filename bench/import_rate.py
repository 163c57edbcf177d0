"""Import rate: ``memctl import`` events per second, on the shared transcripts and on a
generated large one, against a fresh daemon with the default config (embedding on, as
users run it; vectors follow in the background and are not waited for).

For each input: wall time of the first import (everything new) and of a second one
(everything already there: the idempotency path), events/s and MB/s, and the peak RSS
of the memctl process.  The generated transcript is ``--turns`` turns of a prompt, a
Bash, Read or Edit call with its result, and a reply, with varied text (each turn's
words drawn from the shared golden sets' memories), so the privacy filter and the
normalizers do real work.

    .venv/bin/python bench/import_rate.py [--turns 20000] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness import Instance, isolated_daemon, markdown_table

SHARED = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
TRANSCRIPTS = SHARED / "claude-code" / "transcripts"


@dataclasses.dataclass
class Run:
    input: str
    megabytes: float
    events: int
    first_s: float
    first_rate: float
    again_s: float
    again_rate: float
    peak_rss_mb: float
    stored: int
    duplicates_again: int


def vocabulary() -> list[str]:
    words: list[str] = []
    for path in sorted((SHARED / "golden").glob("*.json")):
        for memory in json.loads(path.read_text())["memories"]:
            words += memory["content"].split()
    return words or ["refactor", "the", "parser", "module"]


def generate(path: Path, cwd: str, turns: int, seed: int = 1) -> None:
    """A transcript of ``turns`` turns with varied tools and text."""
    rng = random.Random(seed)
    words = vocabulary()

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    def line(kind: str, turn: int, part: str, **fields: object) -> str:
        at = f"2026-08-{1 + turn // 86400 % 28:02d}T{turn // 3600 % 24:02d}:{turn // 60 % 60:02d}:{turn % 60:02d}.000Z"
        record = {
            "type": kind,
            "sessionId": f"bench-{turn // 200}",
            "cwd": cwd,
            "timestamp": at,
            "uuid": f"{part}{turn}",
        }
        return json.dumps(record | fields) + "\n"

    with path.open("w") as f:
        for turn in range(turns):
            f.write(line("user", turn, "p", message={"role": "user", "content": text(rng.randint(5, 40))}))
            tool = rng.choice(["Bash", "Read", "Edit"])
            name = f"{cwd}/src/{rng.choice(words).strip('.,:;()')}.py"
            call, result = {
                "Bash": ({"command": f"pytest -q tests/test_{turn % 50}.py"},
                         {"stdout": text(rng.randint(20, 400)), "stderr": "", "interrupted": False}),
                "Read": ({"file_path": name}, {"type": "text", "file": {"filePath": name, "content": text(600)}}),
                "Edit": ({"file_path": name, "old_string": text(8), "new_string": text(8)},
                         {"filePath": name, "oldString": text(8), "newString": text(8), "structuredPatch": []}),
            }[tool]  # fmt: skip
            block = {"type": "tool_use", "id": f"toolu_{turn}", "name": tool, "input": call}
            f.write(line("assistant", turn, "a", message={"id": f"m{turn}", "role": "assistant", "content": [block]}))
            output = {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": "ok"}
            f.write(line("user", turn, "r", message={"role": "user", "content": [output]}, toolUseResult=result))
            reply = {"type": "text", "text": text(rng.randint(10, 80))}
            f.write(line("assistant", turn, "t", message={"id": f"n{turn}", "role": "assistant", "content": [reply]}))


def timed_import(instance: Instance, args: list[str]) -> tuple[float, dict, float]:
    """(seconds, memctl's --json summary, peak RSS in MB) of one import in a fresh process."""
    probe = (
        "import json, resource, subprocess, sys, time; t = time.perf_counter();"
        " r = subprocess.run(sys.argv[1:], capture_output=True, text=True); s = time.perf_counter() - t;"
        " assert r.returncode == 0, r.stderr;"
        " print(json.dumps([s, json.loads(r.stdout), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))"
    )
    argv = [sys.executable, "-m", "memd_client.memctl", "import", *args, "--json"]
    done = subprocess.run([sys.executable, "-c", probe, *argv], env=instance.env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    seconds, summary, rss_kb = json.loads(done.stdout)
    return seconds, summary, rss_kb / 1024


def measure(label: str, instance: Instance, args: list[str], size: int) -> Run:
    first_s, first, rss = timed_import(instance, args)
    again_s, again, _ = timed_import(instance, args)
    return Run(
        input=label, megabytes=round(size / 1e6, 1), events=first["events"], first_s=round(first_s, 2),
        first_rate=round(first["events"] / first_s), again_s=round(again_s, 2),
        again_rate=round(again["events"] / again_s), peak_rss_mb=round(rss, 1), stored=first["stored"],
        duplicates_again=again["duplicates"],
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20000, help="turns of the generated transcript (4 records each)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = []
    with isolated_daemon() as instance:
        home = Path(instance.root) / "home"
        shutil.copytree(TRANSCRIPTS, home / ".claude" / "projects")
        instance.env["HOME"] = str(home)
        size = sum(p.stat().st_size for p in (home / ".claude" / "projects").rglob("*.jsonl"))
        runs.append(measure("shared transcripts (3 sessions)", instance, ["--all"], size))
        generated = Path(instance.root) / "generated.jsonl"
        started = time.perf_counter()
        generate(generated, f"{instance.root}/bench-project", args.turns)
        print(
            f"generated {generated.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        runs.append(
            measure(
                f"generated ({args.turns} turns)", instance, ["--session", str(generated)], generated.stat().st_size
            )
        )
    if args.json:
        print(json.dumps([dataclasses.asdict(r) for r in runs]))
        return
    headers = ["input", "MB", "events", "first import s", "events/s", "again s", "events/s again", "peak RSS MB"]
    rows = [
        [r.input, r.megabytes, r.events, r.first_s, r.first_rate, r.again_s, r.again_rate, r.peak_rss_mb] for r in runs
    ]
    print(markdown_table(headers, rows))
    print(f"\nmachine: {resource.getpagesize()}-byte pages; load {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
