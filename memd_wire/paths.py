"""Where a memd instance keeps its files: the one place that decides it.

The daemon, memctl and the hook client all resolve paths through this module, so
setting the XDG variables (or ``MEMD_SOCKET`` / ``MEMD_DATA_DIR``) isolates a whole
instance.

Resolution, first match wins:

- socket:  ``--socket`` flag, ``$MEMD_SOCKET``, ``$XDG_RUNTIME_DIR/memd/memd.sock``,
  else ``<state dir>/run/memd.sock``
- data:    ``--data-dir`` flag, ``$MEMD_DATA_DIR``, ``$XDG_DATA_HOME/memd``, else
  ``~/.local/share/memd`` (database, vector index, model)
- state:   ``$XDG_STATE_HOME/memd``, else ``~/.local/state/memd`` (spool, logs)
- config:  ``$XDG_CONFIG_HOME/memd/config.toml``, else ``~/.config/memd/config.toml``

Paths are deliberately not configurable in config.toml: the hook client must find
the socket and the spool without parsing TOML.

The hook client loads this module under ``python -I -S`` on every Claude Code event,
where ``os`` is not yet imported and would cost ~2 ms; so this module works on plain
strings and ``posix`` (the C core of ``os``, loaded at interpreter start).  memd runs
on POSIX systems only (Unix sockets, flock).
"""

import posix

__all__ = ["Paths", "environ", "resolve"]


def environ() -> dict[str, str]:
    """The process environment, decoded as ``os.environ`` decodes it."""
    return {
        key.decode("utf-8", "surrogateescape"): value.decode("utf-8", "surrogateescape")
        for key, value in posix.environ.items()
    }


def _join(base: str, *names: str) -> str:
    return "/".join((base.rstrip("/"), *names)) if base != "/" else "/" + "/".join(names)


def _abspath(path: str) -> str:
    """``os.path.abspath``: absolute against the working directory, ``.``/``..`` resolved."""
    if not path.startswith("/"):
        path = _join(posix.getcwd(), path)
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part and part != ".":
            parts.append(part)
    return "/" + "/".join(parts)


def _home(env: dict[str, str]) -> str:
    home = env.get("HOME")
    if home:
        return home
    import pwd  # only without $HOME, as os.path.expanduser does

    return pwd.getpwuid(posix.getuid()).pw_dir


def _xdg(var: str, fallback: str, env: dict[str, str]) -> str:
    # The XDG spec says relative values are invalid and must be ignored.
    value = env.get(var, "")
    return value if value.startswith("/") else _join(_home(env), fallback)


class Paths:
    """Every file location of one memd instance."""

    __slots__ = ("config_file", "data_dir", "owns_runtime_dir", "runtime_dir", "socket", "state_dir")

    def __init__(
        self, socket: str, data_dir: str, state_dir: str, config_file: str, owns_runtime_dir: bool = True
    ) -> None:
        self.socket = socket
        self.runtime_dir = socket.rpartition("/")[0] or "/"
        # False when the socket was placed by a flag or $MEMD_SOCKET: its directory may be
        # shared (/tmp, $HOME), so memd must not change its permissions.
        self.owns_runtime_dir = owns_runtime_dir
        self.data_dir = data_dir
        self.state_dir = state_dir
        self.config_file = config_file

    @property
    def database(self) -> str:
        return _join(self.data_dir, "memd.sqlite3")

    @property
    def spool_dir(self) -> str:
        return _join(self.state_dir, "spool")

    @property
    def log_file(self) -> str:
        return _join(self.state_dir, "memd.log")

    @property
    def lock_file(self) -> str:
        """The instance lock: one daemon per socket, and it records who holds it."""
        return self.socket + ".lock"

    def as_dict(self) -> dict[str, str]:
        return {
            "socket": self.socket,
            "data_dir": self.data_dir,
            "database": self.database,
            "state_dir": self.state_dir,
            "spool_dir": self.spool_dir,
            "log_file": self.log_file,
            "config_file": self.config_file,
        }


def resolve(
    socket: str | None = None,
    data_dir: str | None = None,
    env: dict[str, str] | None = None,
) -> Paths:
    """Resolve an instance's paths from flags (the arguments), then the environment."""
    env = environ() if env is None else env
    state_dir = _join(_xdg("XDG_STATE_HOME", ".local/state", env), "memd")
    socket = socket or env.get("MEMD_SOCKET")
    owns_runtime_dir = not socket
    if not socket:
        runtime = env.get("XDG_RUNTIME_DIR", "")
        socket = (
            _join(runtime, "memd", "memd.sock") if runtime.startswith("/") else _join(state_dir, "run", "memd.sock")
        )
    data_dir = data_dir or env.get("MEMD_DATA_DIR") or _join(_xdg("XDG_DATA_HOME", ".local/share", env), "memd")
    return Paths(
        socket=_abspath(socket),
        data_dir=_abspath(data_dir),
        state_dir=state_dir,
        config_file=_join(_xdg("XDG_CONFIG_HOME", ".config", env), "memd", "config.toml"),
        owns_runtime_dir=owns_runtime_dir,
    )
