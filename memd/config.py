"""memd's settings: one typed schema, every key with a default.

The file is ``$XDG_CONFIG_HOME/memd/config.toml`` and is optional.  Unknown keys and
wrong types are errors that name the key, so a typo never silently does nothing::

    [daemon]
    log_level = "info"          # debug | info | warning | error
    idle_timeout = 600.0        # seconds an idle client connection is kept open
    shutdown_grace = 10.0       # seconds in-flight requests get to finish on SIGTERM
    spool_drain_interval = 5.0  # seconds between spool scans

    [store]
    busy_timeout_ms = 5000      # how long SQLite waits on a lock before failing
    batch_max = 256             # most events committed in one transaction

File locations are not configured here (see memd_client/paths.py): the hook client
must find the socket without reading TOML.
"""

from __future__ import annotations

import tomllib
from typing import Annotated, Literal

import msgspec

__all__ = ["Config", "ConfigError", "load"]

Positive = Annotated[float, msgspec.Meta(gt=0)]


class DaemonConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    idle_timeout: Positive = 600.0
    shutdown_grace: Positive = 10.0
    spool_drain_interval: Positive = 5.0


class StoreConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    busy_timeout_ms: Annotated[int, msgspec.Meta(ge=0)] = 5000
    batch_max: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 256


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    store: StoreConfig = msgspec.field(default_factory=StoreConfig)


class ConfigError(Exception):
    """The config file exists but cannot be used; the message names the file and the key."""


def load(path: str) -> Config:
    """Read ``path``; a missing file means all defaults."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return Config()
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    try:
        return msgspec.convert(data, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from None
