"""memd as a service: socket activation and idle exit (real daemons on a socket the test
holds, as systemd would), the unit files and the plist (``systemd-analyze verify`` where
it exists, and always a structural check that runs the rendered command), and
``memctl service install|status|uninstall`` against a stand-in service manager (a test
machine has no user systemd manager or launchd to drive)."""

from __future__ import annotations

import json
import os
import plistlib
import shlex
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PYTHON, Instance

from memd import __version__
from memd.protocol import Ingest, Ingested, Ping, Pong
from memd.server.activation import adopt_socket, inherited_socket, listen_fds
from memd.services.idle import embedding_pending
from memd_client import service
from memd_client.rpc import Client
from memd_client.service import units
from memd_client.service.manager import ServiceError
from memd_wire import autostart
from memd_wire.paths import resolve

ROOT = Path(__file__).resolve().parents[1]

TRAMPOLINE = """\
import os, sys
fd = int(sys.argv[1])
os.dup2(fd, 3)  # systemd passes its sockets from fd 3 on
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid())  # exec keeps the pid: memd will see its own
os.execv(sys.executable, [sys.executable, "-m", "memd", *sys.argv[2:]])
"""
"""Starts memd as systemd does on socket activation."""

FAKE_CTL = """\
#!/bin/sh
echo "$*" >> "$FAKE_CTL_LOG"
case "$*" in
  "print gui/"*"/dev.memd") echo "Could not find service" >&2; exit 113 ;;
  *show-environment*|"print gui/"*)
    if [ -n "$FAKE_NO_MANAGER" ]; then echo "Failed to connect to bus: No such file or directory" >&2; exit 1; fi ;;
  *MainPID*) echo 0 ;;
  *is-active*) printf 'active\\ninactive\\n'; exit 3 ;;
esac
exit 0
"""
"""A stand-in systemctl/launchctl: logs its arguments, answers the questions memctl asks."""


# --- helpers ----------------------------------------------------------------------------


@pytest.fixture
def held_socket(instance: Instance) -> Iterator[socket.socket]:
    """A listening socket at the instance's socket path, held by the test as systemd holds memd.socket's."""
    os.makedirs(instance.paths.runtime_dir, mode=0o700, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(instance.paths.socket)
    sock.listen()
    yield sock
    sock.close()


def activate(instance: Instance, sock: socket.socket, *args: str) -> subprocess.Popen[bytes]:
    """Start memd with ``sock`` passed as systemd passes it; wait until it answers."""
    with open(instance.stderr_file, "ab") as stderr:
        instance.process = subprocess.Popen(
            [PYTHON, "-c", TRAMPOLINE, str(sock.fileno()), *args],
            env=instance.env,
            pass_fds=[sock.fileno()],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    instance.wait_ready()
    return instance.process


def logged(instance: Instance, event: str) -> list[dict]:
    return instance.logged(event)


def prompt(text: str) -> Ingest:
    payload = {"session_id": "s-svc", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit", "prompt": text}
    return Ingest(event="UserPromptSubmit", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())


def is_socket_file(path: str) -> bool:
    return os.path.exists(path) and stat.S_ISSOCK(os.stat(path).st_mode)


# --- socket activation: the pieces --------------------------------------------------------


def test_listen_fds_takes_only_what_was_meant_for_this_process() -> None:
    assert listen_fds({"LISTEN_PID": "42", "LISTEN_FDS": "1"}, 42) == 1
    assert listen_fds({"LISTEN_PID": "42", "LISTEN_FDS": "2"}, 42) == 2
    assert listen_fds({"LISTEN_PID": "41", "LISTEN_FDS": "1"}, 42) == 0  # a parent's, left behind
    assert listen_fds({"LISTEN_FDS": "1"}, 42) == 0
    assert listen_fds({"LISTEN_PID": "42", "LISTEN_FDS": "x"}, 42) == 0
    assert listen_fds({"LISTEN_PID": "42", "LISTEN_FDS": "-1"}, 42) == 0
    assert listen_fds({}, 42) == 0


def test_inherited_socket_clears_the_variables_meant_for_another_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LISTEN_PID", str(os.getpid() + 1))
    monkeypatch.setenv("LISTEN_FDS", "1")
    monkeypatch.setenv("LISTEN_FDNAMES", "memd.socket")
    assert inherited_socket() is None
    assert not {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} & set(os.environ)


def test_only_a_listening_unix_stream_socket_on_a_path_is_adopted(tmp_path: Path) -> None:
    def adopted(sock: socket.socket) -> str:
        """What adopt_socket says about a copy of ``sock``'s descriptor ("ok" if it takes it)."""
        fd = os.dup(sock.fileno())
        result = adopt_socket(fd)
        if isinstance(result, socket.socket):
            assert result.fileno() == fd and not os.get_inheritable(fd)
            result.close()
            return "ok"
        os.close(fd)  # refused descriptors are left open, as they came
        return result

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as good:
        good.bind(str(tmp_path / "ok.sock"))
        good.listen()
        assert adopted(good) == "ok"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as quiet:
        quiet.bind(str(tmp_path / "quiet.sock"))
        assert "not listening" in adopted(quiet)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as datagram:
        datagram.bind(str(tmp_path / "dgram.sock"))
        assert "not a Unix stream socket" in adopted(datagram)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        assert "AF_INET SOCK_STREAM" in adopted(tcp)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as abstract:
        abstract.bind(f"\0memd-test-{os.getpid()}")
        abstract.listen()
        assert "without a file path" in adopted(abstract)
    read_end, write_end = os.pipe()
    try:
        assert "is not a socket" in adopt_socket(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_only_real_embedding_work_holds_an_idle_exit_back() -> None:
    assert embedding_pending("loading", 0)
    assert embedding_pending("indexing", 0)
    assert embedding_pending("ready", 3)
    assert not embedding_pending("ready", 0)
    # Without a model the backlog waits for a daemon that has one: no reason to stay up.
    assert not embedding_pending("disabled", 3)
    assert not embedding_pending("unavailable", 3)


# --- socket activation: real daemons ------------------------------------------------------


def test_socket_activated_daemon_serves_and_leaves_the_socket_to_systemd(
    instance: Instance, held_socket: socket.socket
) -> None:
    process = activate(instance, held_socket)
    assert instance.call(Ping(), Pong).pid == process.pid
    assert instance.call(prompt("socket activation works"), Ingested).event_id > 0
    assert instance.status().socket == instance.paths.socket
    (activated,) = logged(instance, "socket_activated")
    assert activated["fd"] == 3 and activated["socket"] == instance.paths.socket
    assert not logged(instance, "idle_exit_on")  # the default: never

    assert instance.stop() == 0
    # The file is systemd's: still there, still the listening socket, the next client queued in it.
    assert is_socket_file(instance.paths.socket)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as queued:
        queued.settimeout(5)
        queued.connect(instance.paths.socket)


def test_idle_exit_then_the_next_daemon_serves_on_the_same_socket(
    instance: Instance, held_socket: socket.socket
) -> None:
    instance.configure("[daemon]\nidle_exit = 1\n")  # the config key; the second daemon takes the flag
    first = activate(instance, held_socket)
    assert instance.call(prompt("before the idle exit"), Ingested).event_id > 0

    with Client(instance.paths.socket, timeout=10) as open_connection:
        # an open connection is activity, however quiet: the watcher says it held the exit back
        instance.wait_for(lambda: bool(logged(instance, "idle_exit_held")))
        assert first.poll() is None
        open_connection.call(Ping(), Pong)
    closed_at = time.monotonic()
    assert first.wait(timeout=15) == 0
    assert 0.9 <= time.monotonic() - closed_at < 10
    instance.process = None
    (idled,) = logged(instance, "idle_exit")
    assert idled["seconds"] == 1.0
    assert logged(instance, "stopped")  # the same clean path as SIGTERM
    assert is_socket_file(instance.paths.socket)

    # A hook connecting while no daemon runs waits in the socket until the next one serves it.
    with Client(instance.paths.socket, timeout=30) as waiting:
        instance.configure()
        second = activate(instance, held_socket, "--idle-exit", "1")
        assert waiting.call(Ping(), Pong).pid == second.pid
        assert waiting.call(prompt("after the idle exit"), Ingested).event_id > 0
    assert instance.query("SELECT count(*) FROM events WHERE kind = 'prompt'") == [(2,)]
    assert second.wait(timeout=15) == 0
    instance.process = None
    assert len(logged(instance, "idle_exit")) == 2


def test_a_daemon_started_by_hand_does_not_idle_out(instance: Instance) -> None:
    """Nothing would start it again on the next connection: idle exit is for socket activation only."""
    instance.start("--idle-exit", "0.5")
    instance.wait_for(lambda: bool(logged(instance, "idle_exit_off")))  # the decision, made at start
    assert instance.call(Ping(), Pong).pid == instance.process.pid
    (off,) = logged(instance, "idle_exit_off")
    assert off["seconds"] == 0.5 and "not socket-activated" in off["reason"]
    assert instance.stop() == 0
    assert not os.path.exists(instance.paths.socket)  # its own socket: removed


def test_a_daemon_started_by_hand_leaves_a_listening_socket_unit_alone(
    instance: Instance, held_socket: socket.socket
) -> None:
    """memd.socket listens, memd is not running: a hand-started memd must not take the path over."""
    process = instance.start(wait=False)
    assert process.wait(30) == 1
    instance.process = None
    assert "memd.socket" in instance.stderr()
    assert is_socket_file(instance.paths.socket)  # systemd's socket is still there


def test_an_unusable_inherited_descriptor_is_refused_and_memd_binds_its_own(instance: Instance) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        process = activate(instance, tcp)
    assert instance.call(Ping(), Pong).pid == process.pid
    (refused,) = logged(instance, "inherited_socket_refused")
    assert "not a Unix stream socket" in refused["reason"]
    assert instance.stop() == 0
    assert not os.path.exists(instance.paths.socket)


def test_idle_exit_flag_is_validated() -> None:
    done = subprocess.run([PYTHON, "-m", "memd", "--idle-exit", "-5"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "'-5' is not a number of seconds" in done.stderr


# --- the files --------------------------------------------------------------------------


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """A unit file as {section: {key: [values]}} (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None and "=" in line, f"not a unit file line: {raw!r}"
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def exec_argv(value: str) -> list[str]:
    """``ExecStart=``'s words, as systemd reads them (for the quoting memctl writes)."""
    return [word.replace("%%", "%").replace("$$", "$") for word in shlex.split(value)]


def check_units(socket_text: str, service_text: str, listen: str) -> None:
    sock, svc = parse_unit(socket_text), parse_unit(service_text)
    assert set(sock) == {"Unit", "Socket", "Install"} and set(svc) == {"Unit", "Service", "Install"}
    assert sock["Socket"]["ListenStream"] == [listen]
    assert sock["Socket"]["SocketMode"] == ["0600"] and sock["Socket"]["DirectoryMode"] == ["0700"]
    assert sock["Install"]["WantedBy"] == ["sockets.target"]
    assert svc["Unit"]["Requires"] == ["memd.socket"] and svc["Unit"]["After"] == ["memd.socket"]
    assert svc["Service"]["Restart"] == ["on-failure"]
    (exec_start,) = svc["Service"]["ExecStart"]
    argv = exec_argv(exec_start)
    assert argv[0].startswith(("/", "%h/")) and "--idle-exit" in argv
    assert svc["Install"]["Also"] == ["memd.socket"]


def systemd_verify(unit_dir: str, env: dict[str, str]) -> None:
    """``systemd-analyze --user verify``, when this machine has it: no complaint about memd's units."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return
    runtime = os.path.join(env["HOME"], "run")
    os.makedirs(runtime, mode=0o700, exist_ok=True)
    done = subprocess.run(
        [analyze, "--user", "verify", f"{unit_dir}/memd.socket", f"{unit_dir}/memd.service"],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_RUNTIME_DIR": runtime, **env},
        timeout=60,
    )
    complaints = [line for line in (done.stdout + done.stderr).splitlines() if "memd" in line]
    assert done.returncode == 0 and not complaints, done.stdout + done.stderr


def test_the_repository_files_are_the_hand_install_rendering() -> None:
    for name, text in units.hand_install_files().items():
        on_disk = (ROOT / "systemd" / name).read_text()
        assert on_disk == text, (
            f"systemd/{name} differs from memd_client.service.units.hand_install_files()[{name!r}]: "
            "change the rendering, then write its output to the file"
        )


def test_hand_install_units_verify(tmp_path: Path) -> None:
    files = units.hand_install_files()
    check_units(files["memd.socket"], files["memd.service"], "%t/memd/memd.sock")
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "memd").symlink_to(PYTHON)  # where pipx puts it: %h/.local/bin/memd
    for name in ("memd.socket", "memd.service"):
        (tmp_path / name).write_text(files[name])
    systemd_verify(str(tmp_path), {"HOME": str(home)})


def test_rendered_units_verify_and_run_this_installation(instance: Instance) -> None:
    runtime = instance.env["XDG_RUNTIME_DIR"]
    unit_dir = os.path.join(instance.root, "units")
    files = units.systemd_files(unit_dir, instance.paths, PYTHON, 900, runtime)
    texts = {os.path.basename(path): text for path, text in files.items()}
    check_units(texts["memd.socket"], texts["memd.service"], "%t/memd/memd.sock")
    argv = exec_argv(parse_unit(texts["memd.service"])["Service"]["ExecStart"][0])
    assert argv[:4] == [PYTHON, "-P", "-m", "memd"]
    assert argv[argv.index("--data-dir") + 1] == instance.paths.data_dir
    assert argv[argv.index("--config") + 1] == instance.paths.config_file
    assert argv[argv.index("--idle-exit") + 1] == "900"
    environment = parse_unit(texts["memd.service"])["Service"]["Environment"]
    assert environment == [f'"XDG_STATE_HOME={os.path.dirname(instance.paths.state_dir)}"']
    version = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60, cwd=instance.root)
    assert version.stdout.strip() == f"memd {__version__}", version.stderr
    for path, text in files.items():
        os.makedirs(unit_dir, exist_ok=True)
        Path(path).write_text(text)
    systemd_verify(unit_dir, {"HOME": instance.root, "XDG_RUNTIME_DIR": runtime})


def test_a_socket_outside_the_runtime_dir_is_written_as_its_absolute_path() -> None:
    assert units.listen_address("/run/user/1000/memd/memd.sock", "/run/user/1000") == "%t/memd/memd.sock"
    assert units.listen_address("/home/u/.local/state/memd/run/memd.sock", "") == (
        "/home/u/.local/state/memd/run/memd.sock"
    )
    assert units.listen_address("/tmp/100%/memd.sock", "/run/user/1000") == "/tmp/100%%/memd.sock"


def test_exec_start_words_survive_systemd_quoting() -> None:
    assert units.systemd_word("/usr/bin/python3") == "/usr/bin/python3"
    assert units.systemd_word("/home/a b/%t$HOME") == '"/home/a b/%%t$$HOME"'
    assert units.systemd_word('say "hi"\\') == '"say \\"hi\\"\\\\"'
    for word in ("/opt/my venv/bin/python", "50%", "$USER", 'a"b'):
        assert exec_argv(units.systemd_word(word)) == [word]


def test_launchd_plists_load_and_run_this_installation(instance: Instance) -> None:
    agent_dir = os.path.join(instance.root, "LaunchAgents")
    ((path, text),) = units.launchd_files(agent_dir, instance.paths, PYTHON).items()
    assert path == os.path.join(agent_dir, "dev.memd.plist")
    job = plistlib.loads(text.encode())
    assert job["Label"] == "dev.memd" and job["RunAtLoad"] is True
    assert job["KeepAlive"] == {"SuccessfulExit": False}
    assert job["StandardErrorPath"] == job["StandardOutPath"] == f"{instance.paths.state_dir}/launchd.log"
    assert job["EnvironmentVariables"] == {"XDG_STATE_HOME": os.path.dirname(instance.paths.state_dir)}
    argv = job["ProgramArguments"]
    assert argv[:4] == [PYTHON, "-P", "-m", "memd"] and "--idle-exit" not in argv
    assert "--no-stderr-log" in argv  # launchd.log is never rotated: memd's log lines go to memd.log
    assert argv[argv.index("--socket") + 1] == instance.paths.socket
    version = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60, cwd=instance.root)
    assert version.stdout.strip() == f"memd {__version__}", version.stderr

    hand = plistlib.loads(units.hand_install_files()["dev.memd.plist"].encode())
    assert hand["ProgramArguments"] == ["/Users/you/.local/bin/memd"] and hand["KeepAlive"] == job["KeepAlive"]


# --- memctl service ---------------------------------------------------------------------


def fake_manager(instance: Instance, variable: str) -> str:
    """Point ``variable`` (MEMD_SYSTEMCTL, MEMD_LAUNCHCTL) at a stand-in; return its log file."""
    tool = os.path.join(instance.root, "fakectl")
    with open(tool, "w") as f:
        f.write(FAKE_CTL)
    os.chmod(tool, 0o755)
    log = os.path.join(instance.root, "fakectl.log")
    instance.env.update({variable: tool, "FAKE_CTL_LOG": log, "HOME": instance.root})
    return log


def calls(log: str) -> list[str]:
    try:
        with open(log) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def unit_paths(instance: Instance) -> list[str]:
    unit_dir = os.path.join(instance.env["XDG_CONFIG_HOME"], "systemd", "user")
    return [os.path.join(unit_dir, "memd.socket"), os.path.join(unit_dir, "memd.service")]


def test_install_status_uninstall_drive_the_user_manager(instance: Instance) -> None:
    log = fake_manager(instance, "MEMD_SYSTEMCTL")
    installed = instance.memctl("service", "install", "--json")
    assert installed.returncode == 0, installed.stderr
    report = json.loads(installed.stdout)
    assert report["manager"] == "systemd" and report["ran"] and report["files"] == unit_paths(instance)
    assert calls(log) == [
        "--user show-environment",  # no daemon answers: nothing to take over
        "--user daemon-reload",
        "--user stop memd.service",
        "--user enable --now memd.socket",
    ]
    for path in unit_paths(instance):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    socket_unit = parse_unit(Path(unit_paths(instance)[0]).read_text())
    assert socket_unit["Socket"]["ListenStream"] == ["%t/memd/memd.sock"]  # the socket hooks resolve

    status = instance.memctl("service", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) | {"files": None} == {
        "manager": "systemd",
        "installed": True,
        "files": None,
        "states": {"memd.socket": "active", "memd.service": "inactive"},
        "reason": "",
        "running": False,
        "pid": None,
        "socket": instance.paths.socket,
    }

    open(log, "w").close()
    removed = instance.memctl("service", "uninstall")
    assert removed.returncode == 0, removed.stderr
    assert calls(log) == [
        "--user show-environment",
        "--user disable --now memd.socket memd.service",
        "--user daemon-reload",
    ]
    assert not any(os.path.exists(path) for path in unit_paths(instance))
    assert "nothing to do" in instance.memctl("service", "uninstall").stdout
    assert instance.memctl("service", "status").returncode == 1


def test_install_takes_over_from_a_daemon_started_by_hand(daemon: Instance) -> None:
    fake_manager(daemon, "MEMD_SYSTEMCTL")
    pid = daemon.process.pid
    installed = daemon.memctl("service", "install", "--json")
    assert installed.returncode == 0, installed.stderr
    assert json.loads(installed.stdout)["stopped_pid"] == pid
    assert daemon.process.wait(timeout=30) == 0  # a clean stop: the service's daemon takes the lock next
    daemon.process = None


def test_install_without_a_user_manager_writes_the_units_and_says_what_to_run(instance: Instance) -> None:
    log = fake_manager(instance, "MEMD_SYSTEMCTL")
    instance.env["FAKE_NO_MANAGER"] = "1"
    assert not autostart.managed(instance.env)
    installed = instance.memctl("service", "install")
    assert installed.returncode == 0, installed.stderr
    assert autostart.managed(instance.env)  # a hook leaves starting memd to the service manager now
    assert autostart.service_files(instance.env)[0] in unit_paths(instance)
    assert "no user systemd manager answers" in installed.stdout and "Failed to connect to bus" in installed.stdout
    assert "--user enable --now memd.socket" in installed.stdout
    assert calls(log) == ["--user show-environment"]  # asked, nothing driven
    assert all(os.path.exists(path) for path in unit_paths(instance))

    no_systemctl = {**instance.env, "PATH": "/nonexistent"}
    del no_systemctl["MEMD_SYSTEMCTL"]
    status = subprocess.run(
        [*instance.memctl_argv(), "service", "status"], capture_output=True, text=True, env=no_systemctl, timeout=60
    )
    assert status.returncode == 0 and "systemctl was not found" in status.stdout

    removed = instance.memctl("service", "uninstall")
    assert removed.returncode == 0, removed.stderr
    assert "--user stop memd.socket memd.service" in removed.stdout
    assert not any(os.path.exists(path) for path in unit_paths(instance))


def test_dry_runs_change_nothing(instance: Instance) -> None:
    log = fake_manager(instance, "MEMD_SYSTEMCTL")
    planned = instance.memctl("service", "install", "--dry-run", "--idle-exit", "60", "--json")
    assert planned.returncode == 0, planned.stderr
    report = json.loads(planned.stdout)
    assert report["dry_run"] and not report["ran"]
    assert "--idle-exit 60" in report["contents"][unit_paths(instance)[1]]
    assert report["commands"][-1].endswith("--user enable --now memd.socket")
    assert not any(os.path.exists(path) for path in unit_paths(instance))
    assert calls(log) == ["--user show-environment"]

    assert instance.memctl("service", "install").returncode == 0
    open(log, "w").close()
    planned = instance.memctl("service", "uninstall", "--dry-run")
    assert planned.returncode == 0 and "would remove" in planned.stdout
    assert all(os.path.exists(path) for path in unit_paths(instance))
    assert calls(log) == ["--user show-environment"]

    refused = instance.memctl("service", "install", "--idle-exit", "-1")
    assert refused.returncode == 1 and "--idle-exit must be 0 (never) or more seconds" in refused.stderr


def test_launchd_install_and_uninstall(instance: Instance) -> None:
    log = fake_manager(instance, "MEMD_LAUNCHCTL")
    paths = resolve(env=instance.env)
    report = service.install(paths, env=instance.env, platform="darwin")
    plist = os.path.join(instance.root, "Library", "LaunchAgents", "dev.memd.plist")
    assert report.data["files"] == [plist] and report.data["ran"]
    assert autostart.service_files(instance.env)[1] == plist
    uid = os.getuid()
    assert calls(log) == [
        f"print gui/{uid}",
        f"bootout gui/{uid}/dev.memd",  # not loaded: tolerated
        f"bootstrap gui/{uid} {plist}",
    ]
    assert plistlib.loads(Path(plist).read_bytes())["Label"] == "dev.memd"
    assert os.path.isdir(paths.state_dir)  # launchd opens the log there before memd runs

    status = service.status(paths, env=instance.env, platform="darwin")
    assert status.exit_code == 0 and status.data["states"] == {"dev.memd": "not loaded"}

    open(log, "w").close()
    service.uninstall(paths, env=instance.env, platform="darwin")
    assert calls(log) == [f"print gui/{uid}", f"bootout gui/{uid}/dev.memd"]
    assert not os.path.exists(plist)


def test_other_systems_are_told_what_memctl_service_knows(instance: Instance) -> None:
    with pytest.raises(ServiceError, match="systemd \\(Linux\\) and launchd \\(macOS\\), not freebsd14"):
        service.status(instance.paths, env=instance.env, platform="freebsd14")


def test_memctl_service_status_sees_the_socket_activated_daemon(instance: Instance, held_socket: socket.socket) -> None:
    fake_manager(instance, "MEMD_SYSTEMCTL")
    process = activate(instance, held_socket)
    report = json.loads(instance.memctl("service", "status", "--json").stdout)
    assert report["running"] and report["pid"] == process.pid and report["socket"] == instance.paths.socket
    assert instance.stop() == 0
