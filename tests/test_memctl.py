"""memctl as a user runs it: human output, --json with stable keys, clear errors."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import pytest
from conftest import PYTHON, Instance, hook_fixtures, stored_fixtures


def test_not_running_is_one_clear_line_and_exit_1(instance: Instance) -> None:
    for command in (["ping"], ["history"], ["search", "x"]):
        result = instance.memctl(*command)
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1
        assert "memctl daemon start" in result.stderr


def test_status_works_with_the_daemon_down(instance: Instance) -> None:
    assert instance.hook("Stop", b'{"session_id":"s","hook_event_name":"Stop"}\n').returncode == 0
    result = instance.memctl("status", "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["running"] is False
    assert data["spool_backlog"] == 1
    assert data["socket"] == instance.paths.socket
    assert "memctl daemon start" in instance.memctl("status").stdout


def test_daemon_start_status_and_stop(instance: Instance) -> None:
    started = instance.memctl("daemon", "start")
    assert started.returncode == 0, started.stderr
    assert "memd started" in started.stdout
    assert "already running" in instance.memctl("daemon", "start").stdout
    for path in hook_fixtures():
        instance.hook("X", path.read_bytes())
    data = json.loads(instance.memctl("status", "--json").stdout)
    assert data["running"] is True
    assert {"version", "events", "spool_backlog", "sessions", "latency_ms"} <= data.keys()
    assert data["events"] == len(stored_fixtures())
    assert data["latency_ms"]["ingest"]["count"] == len(hook_fixtures())
    human = instance.memctl("status").stdout
    assert f"events:        {data['events']} in" in human
    stopped = instance.memctl("daemon", "stop")
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "memd stopped")
    assert instance.memctl("daemon", "stop").stdout.strip() == "memd is not running"
    # Its log lines went to the rotated log file only; its stderr file keeps what else it
    # printed (startup errors, crashes): nothing here.
    with open(instance.paths.log_file) as log:
        assert '"event": "serving"' in log.read()
    with open(os.path.join(instance.paths.state_dir, "memd-start.err")) as errors:
        assert errors.read() == ""


def test_daemon_start_reports_why_it_failed(instance: Instance) -> None:

    instance.configure("[daemon]\nlog_level = 'loud'\n")
    result = instance.memctl("daemon", "start")
    assert result.returncode == 1
    assert "log_level" in result.stderr


def test_history_and_search(daemon: Instance) -> None:
    for path in hook_fixtures():
        daemon.hook("X", path.read_bytes())
    history = json.loads(daemon.memctl("history", "--limit", "3", "--json").stdout)["events"]
    assert [e["id"] for e in history] == sorted(e["id"] for e in history)
    assert len(history) == 3
    for line, event in zip(daemon.memctl("history", "--limit", "3").stdout.splitlines(), history, strict=True):
        assert f"[mem:{event['cite']}]" in line  # an id to paste into show or timeline
    session = "8bbcceab-0b3e-4e24-98c9-ec146b1ca8c6"
    per_session = json.loads(daemon.memctl("history", "--session", session, "--limit", "100", "--json").stdout)
    assert per_session["events"] and {e["session_id"] for e in per_session["events"]} == {session}

    here = json.loads(daemon.memctl("search", "echo hello", "--json").stdout)  # memctl runs in this repo
    assert here["results"] == [] and here["mode"] == "none" and "--all-projects" in here["notice"]
    assert "nothing searched in" in daemon.memctl("search", "echo hello").stdout
    found = json.loads(daemon.memctl("search", "echo hello", "--all-projects", "--json").stdout)
    assert found["query"] == "echo hello" and found["scope"] is None and found["mode"] == "keyword"
    top = found["results"][0]
    assert {"id", "cite", "kind", "title", "summary", "tokens", "snippet", "score", "confidence"} <= top.keys()
    assert "[echo] [hello]" in top["snippet"] and "keyword" in top["lanes"] and top["confidence"] >= 0.45
    assert "tool" in {hit["kind"] for hit in found["results"]}
    assert "keyword search only: disabled in config" in found["notice"]
    shown = daemon.memctl("search", "echo hello", "--all-projects", "--lanes").stdout
    assert f"[mem:{top['cite']}]" in shown and "why: keyword #" in shown
    assert "no matches" in daemon.memctl("search", "zebra-unicorn", "--all-projects").stdout


def test_hook_command_runs_the_hook(daemon: Instance) -> None:
    result = daemon.memctl("hook-command", "PostToolUse")
    assert result.returncode == 0
    argv = shlex.split(result.stdout)
    assert argv[:2] == ["/usr/bin/env", "--block-signal=TERM,HUP,INT"]  # the signal guard (test_hook_signals.py)
    assert argv[3:5] == ["-I", "-S"] and argv[2].startswith("/") and argv[-1] == "PostToolUse"
    (fixture,) = [p for p in hook_fixtures() if p.name == "hook_PostToolUse.json"]
    ran = subprocess.run(result.stdout, shell=True, input=fixture.read_bytes(), env=daemon.env, timeout=30)
    assert ran.returncode == 0
    assert daemon.status().events == 1
    bad = daemon.memctl("hook-command", "PostToolUze")
    assert bad.returncode == 2 and "PostToolUse" in bad.stderr


def test_common_options_work_before_the_command_too(daemon: Instance) -> None:
    """`memctl --socket X daemon stop` must stop the daemon at X, not the default one."""
    other = f"{daemon.root}/other.sock"
    env = dict(daemon.env)
    started = subprocess.run([*daemon.memctl_argv(), "--socket", other, "--data-dir", f"{daemon.root}/d2",
                              "daemon", "start"], env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert started.returncode == 0 and "memd started" in started.stdout, started.stdout + started.stderr
    try:
        pong = subprocess.run([*daemon.memctl_argv(), "--socket", other, "--json", "ping"], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert json.loads(pong.stdout)["pid"] != daemon.process.pid  # type: ignore[union-attr]
    finally:
        stopped = subprocess.run([*daemon.memctl_argv(), "--socket", other, "daemon", "stop"], env=env,
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
    assert stopped.returncode == 0 and "memd stopped" in stopped.stdout
    assert daemon.status().pid == daemon.process.pid  # type: ignore[union-attr]  # the default one still runs


def test_a_closed_pipe_is_not_an_error(daemon: Instance) -> None:
    """`memctl export | head`: more than a pipe's buffer (64 KB) written to a reader gone."""
    for n in range(60):
        daemon.remember(f"note {n}: " + "lorem ipsum dolor sit amet " * 80, f"{daemon.root}/proj")
    done = subprocess.run(
        f"{shlex.join(daemon.memctl_argv())} export | head -c 1", shell=True, env=daemon.env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout == "{" and "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


@pytest.mark.parametrize(
    ("argv", "flag", "minimum"),
    [
        (["search", "x", "--limit", "0"], "--limit", 1),
        (["timeline", "1", "--before", "-1"], "--before", 0),
        (["sessions", "--limit", "many"], "--limit", 1),
    ],
)
def test_counts_below_their_minimum_are_refused(instance: Instance, argv: list[str], flag: str, minimum: int) -> None:
    """Before, --limit 0 or -5 reached the daemon, which quietly answered one hit."""
    done = instance.memctl(*argv)
    assert done.returncode == 2
    assert f"argument {flag}: '{argv[-1]}' is not a whole number of {minimum} or more" in done.stderr


LOADED = """
import sys
from memd_client.memctl import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)))
"""


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["search", "--help"]], ids=" ".join)
def test_memctl_imports_only_what_the_command_needs(argv: list[str]) -> None:
    """Issue 18: memctl declared every command's arguments and imported every command's
    modules at start (~130 ms for --version).  Now --version and --help load none of memd
    but its version, and a command's --help what its arguments are made of, no more."""
    done = subprocess.run([PYTHON, "-c", LOADED, *argv], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(done.stdout.splitlines()[-1].split())
    assert "memd" in loaded and "memd_client.memctl" in loaded
    assert not {"memd.context", "memd_client.rpc"} & loaded  # what a search needs when it runs
    if argv[0] == "search":
        assert "memd.protocol" in loaded  # --kind's choices: the event kinds
        assert "memd.capture" not in loaded
    else:
        assert not {"msgspec", "memd.protocol", "memd.capture"} & loaded
