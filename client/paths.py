"""Where a memd instance keeps its files: the one place that decides it.

The daemon, memctl and the hook client all resolve paths through this module, so
setting the XDG variables (or ``MEMD_SOCKET`` / ``MEMD_DATA_DIR``) isolates a whole
instance.  It imports nothing but ``os`` because the hook client loads it under
``python -I -S`` on every Claude Code event.

Resolution, first match wins:

- socket:  ``--socket`` flag, ``$MEMD_SOCKET``, ``$XDG_RUNTIME_DIR/memd/memd.sock``,
  else ``<state dir>/run/memd.sock``
- data:    ``--data-dir`` flag, ``$MEMD_DATA_DIR``, ``$XDG_DATA_HOME/memd``, else
  ``~/.local/share/memd`` (database, vector index, model)
- state:   ``$XDG_STATE_HOME/memd``, else ``~/.local/state/memd`` (spool, logs)
- config:  ``$XDG_CONFIG_HOME/memd/config.toml``, else ``~/.config/memd/config.toml``

Paths are deliberately not configurable in config.toml: the hook client must find
the socket and the spool without parsing TOML.
"""

import os

__all__ = ["Paths", "resolve"]


def _xdg(var: str, fallback: str, env: "os._Environ[str] | dict[str, str]") -> str:
    # The XDG spec says relative values are invalid and must be ignored.
    value = env.get(var, "")
    if value and os.path.isabs(value):
        return value
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), fallback)


class Paths:
    """Every file location of one memd instance."""

    __slots__ = ("config_file", "data_dir", "owns_runtime_dir", "runtime_dir", "socket", "state_dir")

    def __init__(
        self, socket: str, data_dir: str, state_dir: str, config_file: str, owns_runtime_dir: bool = True
    ) -> None:
        self.socket = socket
        self.runtime_dir = os.path.dirname(socket)
        # False when the socket was placed by a flag or $MEMD_SOCKET: its directory may be
        # shared (/tmp, $HOME), so memd must not change its permissions.
        self.owns_runtime_dir = owns_runtime_dir
        self.data_dir = data_dir
        self.state_dir = state_dir
        self.config_file = config_file

    @property
    def database(self) -> str:
        return os.path.join(self.data_dir, "memd.sqlite3")

    @property
    def spool_dir(self) -> str:
        return os.path.join(self.state_dir, "spool")

    @property
    def log_file(self) -> str:
        return os.path.join(self.state_dir, "memd.log")

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
    env: "os._Environ[str] | dict[str, str] | None" = None,
) -> Paths:
    """Resolve an instance's paths from flags (the arguments), then the environment."""
    env = os.environ if env is None else env
    state_dir = os.path.join(_xdg("XDG_STATE_HOME", ".local/state", env), "memd")
    if not socket:
        socket = env.get("MEMD_SOCKET")
    owns_runtime_dir = not socket
    if not socket:
        runtime = env.get("XDG_RUNTIME_DIR", "")
        base = os.path.join(runtime, "memd") if os.path.isabs(runtime) else os.path.join(state_dir, "run")
        socket = os.path.join(base, "memd.sock")
    data_dir = data_dir or env.get("MEMD_DATA_DIR") or os.path.join(_xdg("XDG_DATA_HOME", ".local/share", env), "memd")
    config_file = os.path.join(_xdg("XDG_CONFIG_HOME", ".config", env), "memd", "config.toml")
    return Paths(
        socket=os.path.abspath(socket),
        data_dir=os.path.abspath(data_dir),
        state_dir=state_dir,
        config_file=config_file,
        owns_runtime_dir=owns_runtime_dir,
    )
