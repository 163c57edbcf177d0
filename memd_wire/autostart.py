"""Start the daemon from a client that found nothing listening on its socket.

Without a service manager nothing starts memd after a reboot or a crash, so the hook
client starts it when a hook finds no daemon, and the MCP server does the same before it
waits for the daemon to answer.  The hook never waits for the daemon to boot: it has
already spooled its event, and the daemon drains the spool when it starts.

The daemon is launched fully detached: its own session, working directory ``/``, stdin
and stdout on ``/dev/null``, stderr in ``memd-autostart.err`` in the state directory (the
only record of a daemon that dies before its logging is set up, say on a bad config, or
of a crash; its log lines go to its rotated log file only: ``--no-stderr-log``),
and no other descriptor: Claude Code reads a hook's stdout until every holder closes it.

Many hooks fire at once (a turn's tool calls, parallel hooks of one event), and all of
them find the socket missing while a daemon boots.  So there is at most one attempt per
``LAUNCH_INTERVAL`` per instance, across processes: a stamp file in the state directory,
taken with ``flock``, holds the time of the last attempt; a client that finds it locked
or recent leaves the start to the other.  Nor is there an attempt while a daemon holds
the instance lock (``memd/instance.py``): that one is starting up or shutting down.
Nor when ``memctl service install`` made memd a systemd or launchd service: the service
manager starts it (a socket unit even as a connection comes), and one stopped on purpose
stays stopped.  ``MEMD_AUTOSTART=0`` turns all of this off.

The hook client imports this module only on its slow path (nothing listens), and
``subprocess`` and ``threading`` (~15 ms of imports) only when it does launch.
"""

import fcntl
import json
import os
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; mypy takes the name as true
if TYPE_CHECKING or __package__:
    from .paths import Paths
else:  # imported by the hook client as a top-level module: site-packages is not on sys.path
    from paths import Paths

__all__ = [
    "LAUNCH_INTERVAL",
    "daemon_argv",
    "enabled",
    "is_locked",
    "launch_due",
    "lock_holder",
    "managed",
    "service_files",
    "start_daemon",
]

LAUNCH_INTERVAL = 10.0
"""Seconds between two launch attempts for one instance.  Longer than a daemon takes to
bind its socket on a loaded machine (~1-2 s), so the hooks fired while it boots do not
fork a herd of Python processes that would each load memd only to lose the instance
lock; short enough that a daemon that died comes back within a few tool calls.  A daemon
that cannot start (a bad config) costs one failed launch per interval, not one per hook."""
STAMP_FILE = "autostart.stamp"
ERRORS_FILE = "memd-autostart.err"
OFF = ("0", "false", "no", "off")


# --- decisions ---------------------------------------------------------------------------


def enabled(env: dict[str, str]) -> bool:
    """Whether ``$MEMD_AUTOSTART`` allows starting the daemon (it does unless set to 0)."""
    return env.get("MEMD_AUTOSTART", "").strip().lower() not in OFF


def service_files(env: dict[str, str]) -> tuple[str, str]:
    """Where ``memctl service install`` puts memd's socket unit (systemd) and its plist
    (launchd); ``tests/test_service.py`` checks that they are where it writes them."""
    home = env.get("HOME", "")
    config = env.get("XDG_CONFIG_HOME", "")
    config = config if config.startswith("/") else os.path.join(home, ".config")
    return (
        os.path.join(config, "systemd", "user", "memd.socket"),
        os.path.join(home, "Library", "LaunchAgents", "dev.memd.plist"),
    )


def managed(env: dict[str, str]) -> bool:
    """Whether a service manager runs memd here: then it, not a hook, starts the daemon
    (when memd is down anyway, the service was stopped on purpose, or it is restarting)."""
    return any(os.path.exists(path) for path in service_files(env))


def launch_due(last_attempt: float | None, now: float, interval: float = LAUNCH_INTERVAL) -> bool:
    """Whether ``interval`` seconds have passed since the last attempt.  A clock set back
    (the last attempt in the future) must not block starts for as long as it was set back."""
    return last_attempt is None or not 0 <= now - last_attempt < interval


def parse_stamp(data: bytes) -> float | None:
    """The time a stamp file records; None for an empty or garbled one (no attempt known)."""
    try:
        return float(data)
    except ValueError:
        return None


def daemon_argv(python: str, where: Paths) -> list[str]:
    """The command line of a daemon for the instance ``where``, run by ``python``.

    ``-E`` so that PYTHONPATH, PYTHONHOME and the like in Claude Code's environment (a
    project's, a conda's) cannot change the code the daemon runs, as ``-I`` keeps them
    from the hook client; ``-P`` so that no directory of the caller's lands on sys.path.
    Not ``-I``: its third part, ``-s``, hides the user site-packages, where ``pip install
    --user`` puts memd; a venv (pipx's too) has no user site, so there ``-E -P`` is ``-I``.
    And not ``-S``: the daemon needs site-packages.

    The daemon inherits the caller's environment, so it resolves the same state and
    config directories; the data directory and a socket placed by ``--socket`` or
    ``$MEMD_SOCKET`` are passed as absolute flags, because the daemon runs from ``/``
    where a relative ``$MEMD_SOCKET`` or ``$MEMD_DATA_DIR`` would name other files.
    The default socket is left for the daemon to derive, so that it still owns (and
    keeps private) its runtime directory.
    """
    argv = [python, "-E", "-P", "-m", "memd", "--no-stderr-log", "--data-dir", where.data_dir]
    if not where.owns_runtime_dir:
        argv += ["--socket", where.socket]
    return argv


# --- IO ----------------------------------------------------------------------------------


def is_locked(lock_file: str) -> bool:
    """Whether a live daemon holds ``lock_file`` (the kernel frees it when the holder exits).
    Here, not in ``memd.instance`` (which uses it too), because the hook client runs without
    site-packages and imports this module on its own."""
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def lock_holder(lock_file: str) -> int:
    """The pid the daemon holding ``lock_file`` recorded in it; 0 when unreadable.

    The daemon writes ``{"pid", "socket", "data_dir", "version"}`` there (``memd.instance``,
    the daemon floor, which the clients do not import); read here with ``json`` alone.
    """
    try:
        with open(lock_file, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return 0
    pid = record.get("pid") if isinstance(record, dict) else None
    return pid if isinstance(pid, int) else 0


def _launch(argv: list[str], state_dir: str, env: dict[str, str]) -> None:
    import subprocess  # only when launching: ~14 ms of imports
    import threading

    errors = os.open(os.path.join(state_dir, ERRORS_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            cwd="/",  # the caller's directory is a user's project: never pin it, never import from it
            env=env,
            close_fds=True,
            start_new_session=True,  # no signal for the hook's process group or terminal reaches it
        )
    finally:
        os.close(errors)
    # Collect its exit status whenever it exits, so that a long-lived caller (the MCP server)
    # keeps no zombie.  A hook exits long before; the daemon, orphaned, is reaped by init.
    threading.Thread(target=process.wait, name="memd-autostart-reaper", daemon=True).start()


def start_daemon(where: Paths, python: str, env: dict[str, str] | None = None) -> bool:
    """Start a detached ``python -m memd`` for the instance ``where``, unless turned off,
    attempted less than ``LAUNCH_INTERVAL`` ago, or a daemon is already up or booting.

    Returns whether it launched one; it does not wait for the daemon to answer.  Raises
    OSError when the state directory cannot be written or the interpreter not run.
    """
    env = dict(os.environ) if env is None else env
    if not python or not enabled(env) or managed(env):
        return False
    os.makedirs(where.state_dir, mode=0o700, exist_ok=True)
    stamp = os.open(os.path.join(where.state_dir, STAMP_FILE), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(stamp, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # another client is deciding this very moment: leave it to it
        now = time.time()
        if not launch_due(parse_stamp(os.pread(stamp, 64, 0)), now) or is_locked(where.lock_file):
            return False
        os.ftruncate(stamp, 0)
        os.pwrite(stamp, f"{now}\n".encode(), 0)  # before launching: a launch that fails counts too
        _launch(daemon_argv(python, where), where.state_dir, env)
        return True
    finally:
        os.close(stamp)  # releases the flock
