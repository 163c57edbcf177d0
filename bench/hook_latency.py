"""Wall time of one hook invocation against the cost of starting Python at all.

Runs an isolated daemon, then alternates ``python -I -S -c pass`` (the floor) with the
real hook command (``memctl hook-command PostToolUse``) fed a ~2 KB PostToolUse
payload, so both series share the machine's noise.  Afterwards checks that every
event reached the database and none was spooled.

``--against DIR`` also times another version's hook client (``DIR/hook.py``, e.g. the
``client/`` folder of a checkout of the commit before a change) in the same rotation,
against the same daemon: a before/after comparison that shares the machine's noise.

    .venv/bin/python bench/hook_latency.py [--runs 300] [--against DIR] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import subprocess
import sys
import time
import uuid

from harness import Instance, isolated_daemon, markdown_table, payload_factory, summary

from memd_client.memctl.claude import hook_command
from memd_wire.launcher import signal_guard

TARGET_RATIO = 1.4


@dataclasses.dataclass
class Result:
    runs: int
    warmup: int
    payload_bytes: int
    hook_command: str
    baseline_command: str
    baseline_ms: dict[str, float]
    hook_ms: dict[str, float]
    ratio_p50: float
    ratio_p95: float
    against_command: str | None
    against_ms: dict[str, float] | None
    daemon_ingest_ms: dict[str, float]
    events_sent: int
    events_stored: int
    rejected: int
    spooled: int

    @property
    def ok(self) -> bool:
        return self.events_stored == self.events_sent and self.rejected == 0 and self.spooled == 0


def timed_run(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    """Milliseconds from spawn to exit."""
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - started) * 1000


def measure(instance: Instance, runs: int, warmup: int, size: int, against: str | None = None) -> Result:
    hook = shlex.split(hook_command("PostToolUse"))  # the signal guard first, where the system has one
    python = hook[len(signal_guard())]
    baseline = [python, "-I", "-S", "-c", "pass"]  # the same interpreter path as the hook
    other = [python, "-I", "-S", os.path.join(against, "hook.py"), "PostToolUse"] if against else None
    make = payload_factory(size)
    token = uuid.uuid4().hex[:12]
    base_ms: list[float] = []
    hook_ms: list[float] = []
    other_ms: list[float] = []
    series = [(baseline, base_ms), (hook, hook_ms)] + ([(other, other_ms)] if other else [])
    payload = b""
    sent = 0
    for i in range(-warmup, runs):
        turn = series[i % len(series) :] + series[: i % len(series)]  # rotate which one goes first
        for argv, samples in turn:
            payload = make(f"toolu_bench_{token}_{sent:06d}")
            sent += argv is not baseline
            ms = timed_run(argv, payload, instance.env)
            if i >= 0:
                samples.append(ms)
    status = instance.status()
    ingest = status.latency_ms.get("ingest")
    base, hooked = summary(base_ms), summary(hook_ms)
    return Result(
        runs=runs,
        warmup=warmup,
        payload_bytes=len(payload),
        hook_command=shlex.join(hook),
        baseline_command=shlex.join(baseline),
        baseline_ms=base,
        hook_ms=hooked,
        ratio_p50=hooked["p50"] / base["p50"],
        ratio_p95=hooked["p95"] / base["p95"],
        against_command=shlex.join(other) if other else None,
        against_ms=summary(other_ms) if other else None,
        daemon_ingest_ms={"count": ingest.count, "p50": ingest.p50, "p95": ingest.p95, "p99": ingest.p99}
        if ingest
        else {},
        events_sent=sent,
        events_stored=status.events,
        rejected=status.rejected,
        spooled=len(instance.spooled()),
    )


def report(r: Result) -> str:
    base, hooked, daemon = r.baseline_ms, r.hook_ms, r.daemon_ingest_ms
    rows: list[list[object]] = [
        ["`python -I -S -c pass`", base["p50"], base["p95"], base["p99"], base["mean"]],
        ["hook (PostToolUse)", hooked["p50"], hooked["p95"], hooked["p99"], hooked["mean"]],
        ["hook / baseline", r.ratio_p50, r.ratio_p95, "", ""],
    ]
    if r.against_ms:
        other = r.against_ms
        rows.append([f"`{r.against_command}`", other["p50"], other["p95"], other["p99"], other["mean"]])
        rows.append(["that / baseline", other["p50"] / base["p50"], other["p95"] / base["p95"], "", ""])
    if daemon:
        rows.append([f"daemon-side ingest (n={daemon['count']:.0f})", daemon["p50"], daemon["p95"], daemon["p99"], ""])
    return "\n".join(
        [
            f"hook latency: {r.runs} interleaved runs of each (+{r.warmup} warm-up), {r.payload_bytes}-byte payload",
            f"hook: `{r.hook_command}`",
            "",
            markdown_table(["ms", "p50", "p95", "p99", "mean"], rows),
            "",
            f"p50 ratio {r.ratio_p50:.2f} (target <= {TARGET_RATIO}:"
            f" {'met' if r.ratio_p50 <= TARGET_RATIO else 'MISSED'}); events sent {r.events_sent},"
            f" stored {r.events_stored}, rejected {r.rejected}, spooled {r.spooled}:"
            f" {'all stored' if r.ok else 'MISMATCH'}",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=300, help="timed runs of each command (default 300)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs of each first (default 10)")
    parser.add_argument("--size", type=int, default=2048, help="payload bytes (default 2048)")
    parser.add_argument("--against", metavar="DIR", help="also time DIR/hook.py, another version's hook client")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    with isolated_daemon() as instance:
        result = measure(instance, args.runs, args.warmup, args.size, args.against)
    if args.json:
        print(json.dumps({**dataclasses.asdict(result), "ok": result.ok}, indent=2))
    else:
        print(report(result))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
