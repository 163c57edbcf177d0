"""Cost of the capture pipeline per event: parse, privacy filter, normalize, clip.

Runs ``Capture.prepare`` in-process (no daemon, no socket) on a typical 2 KB Bash
PostToolUse, on the real UserPromptSubmit fixture, and on a 1 MB Read of a source
file with a few secrets in it, and prints p50/p99 per event.

    .venv/bin/python bench/capture.py [--runs 300]
"""

from __future__ import annotations

import argparse
import json
import time

from harness import FIXTURE, markdown_table, summary

from memd.capture.prepare import Capture
from memd.capture.privacy import Privacy
from memd.config import Config
from memd.protocol import Ingest

SOURCE_LINE = (
    'def handler(request):  # api_key = "sk-proj-abc123def456ghi789jkl"\n    return render(request, "x.html")\n'
)


def payloads() -> dict[str, bytes]:
    bash = json.loads(FIXTURE.read_bytes())
    bash["tool_response"]["stdout"] = "build step ok\n" * 130
    prompt = (FIXTURE.parent / "hook_UserPromptSubmit.json").read_bytes()
    big = json.loads(FIXTURE.read_bytes())
    big |= {"tool_name": "Read", "tool_input": {"file_path": "/p/big.py"}}
    content = SOURCE_LINE * (1_000_000 // len(SOURCE_LINE))
    big["tool_response"] = {"type": "text", "file": {"filePath": "/p/big.py", "content": content}}
    return {
        "Bash PostToolUse, 2 KB": json.dumps(bash).encode(),
        "UserPromptSubmit fixture": prompt,
        "Read of a 1 MB file with secrets": json.dumps(big).encode(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    config = Config()
    capture = Capture(config.capture, Privacy(config.privacy))
    rows = []
    for name, raw in payloads().items():
        runs = args.runs if len(raw) < 100_000 else max(20, args.runs // 10)
        samples = []
        for _ in range(runs):
            ingest = Ingest(event="PostToolUse", sent_at_ns=time.time_ns(), payload=raw)
            started = time.perf_counter()
            capture.prepare(ingest, time.time())
            samples.append((time.perf_counter() - started) * 1000)
        stats = summary(samples)
        rows.append([name, len(raw), runs, stats["p50"], stats["p99"]])
    print(markdown_table(["payload", "bytes", "runs", "p50 ms", "p99 ms"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
