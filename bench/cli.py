"""Wall time of ``memctl`` commands against the cost of starting Python at all.

``memctl --version`` is what the command costs before it does anything (the imports
its startup pays for); ``memctl search`` adds one round trip to a daemon holding a few
events; ``memctl status`` what a person checks most (its report, and the imports it needs
to print it).  Runs an isolated daemon, seeds it through the real hook client, then runs
``python -I -S -c pass`` (the floor, the same interpreter) and each command in turn,
rotating which goes first run by run so every series shares the machine's noise, and
reports medians and each command's median as a ratio to the floor's.

The commands run as a user runs them: the ``memctl`` console script installed beside
this interpreter (``python -m memd_client.memctl`` when there is none), with bytecode
caches as an installed package has them (``PYTHONDONTWRITEBYTECODE`` is dropped from
their environment: without caches every import compiles its module, and the figure
would be the compiler's; the warm-up runs write them).  The search
runs with ``--all-projects``: the seeded events' project is not the bench's directory,
and a search scoped to a project with no events returns before it searches.

``--against DIR`` times the same commands with ``DIR`` first on the import path as well
(a directory holding ``memd``, ``memd_wire`` and ``memd_client`` of another version, e.g. the commit
before a change), interleaved with the rest: a before/after comparison that shares the
machine's noise.  The daemon is this version's either way.

    .venv/bin/python bench/cli.py [--runs 30] [--events 20] [--against DIR] [--json]
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

from memd_wire.launcher import HOOK_SCRIPT

QUERY = "echo hello"
"""Words the seeded PostToolUse events hold (Claude Code's recorded ``echo hello`` call)."""
SEED_TIMEOUT = 30.0


@dataclasses.dataclass
class Series:
    name: str
    argv: list[str]
    ms: dict[str, float]
    ratio_p50: float
    import_path: str | None = None


@dataclasses.dataclass
class Result:
    runs: int
    warmup: int
    events: int
    series: list[Series]


def memctl_argv() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "memctl")
    return [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "memd_client.memctl"]


def seed(instance: Instance, events: int) -> None:
    """``events`` PostToolUse events through the hook client, then wait until all are stored."""
    make = payload_factory()
    token = uuid.uuid4().hex[:12]
    hook = [sys.executable, "-I", "-S", HOOK_SCRIPT, "PostToolUse"]
    for i in range(events):
        subprocess.run(hook, input=make(f"toolu_cli_{token}_{i:04d}"), env=instance.env, check=True)
    deadline = time.monotonic() + SEED_TIMEOUT
    while instance.status().events < events:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {instance.status().events} of {events} events were stored")
        time.sleep(0.05)


def timed_run(argv: list[str], env: dict[str, str]) -> float:
    """Milliseconds from spawn to exit; a command that fails is an error, not a figure."""
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode:
        raise RuntimeError(f"{shlex.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return elapsed


def measure(instance: Instance, runs: int, warmup: int, events: int, against: str | None) -> Result:
    memctl = memctl_argv()
    commands: dict[str, tuple[list[str], str | None]] = {
        "`python -I -S -c pass`": ([sys.executable, "-I", "-S", "-c", "pass"], None),
        # What every memctl run is built on, for the ratios' lower bound: site (the console
        # script needs site-packages), argparse, and msgspec (the replies are its Structs).
        "`python -c pass`": ([sys.executable, "-c", "pass"], None),
        "`python -c 'import argparse'`": ([sys.executable, "-c", "import argparse"], None),
        "`python -c 'import argparse, msgspec'`": ([sys.executable, "-c", "import argparse, msgspec"], None),
    }
    for where in [None, against] if against else [None]:
        suffix = f" ({where})" if where else ""
        commands[f"`memctl --version`{suffix}"] = ([*memctl, "--version"], where)
        search = [*memctl, "search", QUERY, "--all-projects"]
        commands[f"`memctl search {QUERY!r} --all-projects`{suffix}"] = (search, where)
        commands[f"`memctl status`{suffix}"] = ([*memctl, "status"], where)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    order = list(commands)
    for i in range(-warmup, runs):
        shift = i % len(order)
        for name in order[shift:] + order[:shift]:  # rotate which one goes first
            argv, where = commands[name]
            env = {k: v for k, v in instance.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env |= {"PYTHONPATH": where} if where else {}
            ms = timed_run(argv, env)
            if i >= 0:
                samples[name].append(ms)
    floor = summary(samples[order[0]])["p50"]
    series = []
    for name, (argv, where) in commands.items():
        ms = summary(samples[name])
        series.append(Series(name, argv, ms, ms["p50"] / floor, where))
    return Result(runs, warmup, events, series)


def report(r: Result) -> str:
    rows = [[s.name, s.ms["p50"], s.ms["p95"], s.ms["mean"], f"{s.ratio_p50:.2f}"] for s in r.series]
    return "\n".join(
        [
            f"memctl startup: {r.runs} interleaved runs of each (+{r.warmup} warm-up),"
            f" daemon holding {r.events} events",
            f"memctl: `{shlex.join(next(s for s in r.series if '--version' in s.name).argv[:-1])}`",
            "",
            markdown_table(["ms", "p50", "p95", "mean", "p50 / floor"], rows),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30, help="timed runs of each command (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs of each first (default 3)")
    parser.add_argument("--events", type=int, default=20, help="events seeded before the search (default 20)")
    parser.add_argument("--against", metavar="DIR", help="also time the commands with DIR first on the import path")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    against = os.path.abspath(args.against) if args.against else None
    with isolated_daemon() as instance:
        seed(instance, args.events)
        result = measure(instance, args.runs, args.warmup, args.events, against)
    print(json.dumps(dataclasses.asdict(result), indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
