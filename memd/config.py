"""memd's settings: one typed schema, every key with a default.

The file is ``$XDG_CONFIG_HOME/memd/config.toml`` and is optional.  Unknown keys and
wrong types are errors that name the key, so a typo never silently does nothing::

    [daemon]
    log_level = "info"          # debug | info | warning | error
    idle_timeout = 600.0        # seconds an idle client connection is kept open
    silent_timeout = 10.0       # seconds a new connection may stay silent before its first request
    max_connections = 1000      # open client connections at most (the oldest idle one makes room)
    shutdown_grace = 10.0       # seconds in-flight requests get to finish on SIGTERM
    spool_drain_interval = 5.0  # seconds between spool scans
    idle_exit = 0.0             # socket-activated only: exit after this many idle seconds; 0 = never

    [store]
    busy_timeout_ms = 5000      # how long SQLite waits on a lock before failing
    batch_max = 256             # most events committed in one transaction

    [capture]
    max_field_chars = 10000     # longer text fields keep head and tail around a marker
    max_field_lines = 100
    trivial_commands = ["ls", "cat", "head", "tail", "pwd", "echo", "cd", "which", ...]
    trivial_action = "low"      # low: stored at importance 1 | skip: not stored (failures always are)
    ignored_path_parts = ["node_modules", ".git", "dist", "build", ".venv", "venv", "__pycache__"]
    skip_tools = []             # tool names never stored (failures still are)
    notifications = "keep"      # keep (importance 1) | skip

    [privacy]                   # removed before anything is stored (rules: memd/capture/privacy/)
    tags = ["xml", "bracket", "comment"]  # <private>, [private], <!-- private -->: any subset
    marker = "[PRIVATE]"        # what a private span becomes: "[PRIVATE]" | "[REDACTED]" | ""
    preserve_lines = false      # true: the replacement keeps the span's newlines
    unclosed = "redact"         # a tag never closed: "redact" to the end | "keep" the text
    secrets = true              # passwords, API keys, tokens, private keys -> [REDACTED:kind]
    extra_patterns = []         # your own regular expressions; each match -> [REDACTED:custom]

    [embedding]                 # vectors for search by meaning (memd/services/embed.py)
    enabled = true              # false: keyword search only, no model loaded
    model = "sentence-transformers/all-MiniLM-L6-v2"  # offline default; any fastembed model (downloaded)
    threads = 0                 # background threads embedding documents at low priority; 0 = one per core
    batch_size = 32             # texts per embedding call (larger grows memory, not speed)

    [retrieval]
    rrf_k = 60                  # reciprocal rank fusion constant
    recency_half_life_days = 14 # the recency boost halves every N days (a boost, never a cutoff)
    min_confidence = 0.45       # hits below it are "low confidence" (no_match territory)

    [context]                   # what memd puts into the agent's context (memd/services/recall.py)
    session_start = true        # a block of this project's memories when a session starts
    prompt = true               # memories relevant to each prompt, when memd is confident
    session_start_budget = 2000 # tokens (estimated: memd/tokens.py)
    prompt_budget = 800
    search_budget = 2000        # smart search and details, unless the request says otherwise
    citation_format = "inline"  # how details cite their source: inline | footnote | reference

    [endless]                   # continuity across sessions (memd/continuity/)
    working_set_hours = 24.0    # how recent an event must be to stay in the working set
    working_set_size = 100      # most events in a project's working set
    consolidate_every = 3600.0  # seconds between consolidations (when there is something new)
    consolidate_after_events = 100  # ... or after this many new events
    consolidate_idle = 1800.0   # ... or once no event came for this many seconds

    [retention]                 # old, unimportant events go (memd/store/retention.py, memctl gc)
    enabled = true              # false: no daily pass (memctl gc still runs one on demand)
    max_age_days = 90.0         # low-importance events older than this are removed
    max_importance = 1          # "low importance": importance <= this (1 reads, searches, trivial commands)
    max_db_bytes = 2000000000   # over this, the oldest low-importance events go first; 0 = no cap

    [sync]                      # opt-in: other machines and teammates, through PostgreSQL (memd/services/sync.py)
    url = ""                    # postgresql://alice@db.example/memd; MEMD_SYNC_URL wins; "" = no sync.
                                # Put the password in ~/.pgpass (or PGPASSWORD), not here.
    machine = ""                # this machine's label in `memctl sync status`; "" = the host name (the id
                                # in the shared log is random, made once: machine-id in the data dir)
    interval = 5.0              # seconds between rounds when nothing is moving
    batch = 500                 # events per push or pull transaction
    pull_teams = true           # false: teammates' memories stay on the server (`memctl search --team`
                                # searches them there); only this person's own come to this machine
    [sync.teams]                # project key = the team's PostgreSQL role: the project's memories are
    # "github.com/acme/api" = "memd_team_acme"    # shared with that team (memctl project list: keys)

Retention never removes errors (``tool_error``), memories kept on purpose (``memory``),
session summaries, snapshots and consolidations, nor any memory that was cited (used by
id) or graduated to level 2 or higher.  It runs at most once a day, in the background.

``idle_exit`` (also ``memd --idle-exit SECONDS``) lets a daemon that systemd started on
its socket exit when nothing happened for that long: no client connected, no request, no
event left to embed.  It consolidates first (a consolidation trigger would otherwise be
forgotten), then shuts down as on SIGTERM, with status 0.  It applies only to a
socket-activated daemon, because only then does something (systemd, holding the socket)
start memd again on the next connection; a daemon started by hand or by launchd ignores
it and says so in its log.  ``memctl service install`` sets it to 900 on the command line.

File locations are not configured here (see memd_client/paths.py): the hook client
must find the socket without reading TOML.
"""

from __future__ import annotations

import re
import tomllib
from typing import Annotated, Literal

import msgspec

__all__ = ["Config", "ConfigError", "load"]

Positive = Annotated[float, msgspec.Meta(gt=0)]


class DaemonConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    idle_timeout: Positive = 600.0
    silent_timeout: Positive = 10.0
    max_connections: Annotated[int, msgspec.Meta(ge=8)] = 1000
    shutdown_grace: Positive = 10.0
    spool_drain_interval: Positive = 5.0
    idle_exit: Annotated[float, msgspec.Meta(ge=0)] = 0.0


class StoreConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    busy_timeout_ms: Annotated[int, msgspec.Meta(ge=0)] = 5000
    batch_max: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 256


class EmbeddingConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    enabled: bool = True
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    threads: Annotated[int, msgspec.Meta(ge=0, le=256)] = 0
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=32)] = 32


class RetrievalConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    rrf_k: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 60
    recency_half_life_days: Positive = 14.0
    min_confidence: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.45


Budget = Annotated[int, msgspec.Meta(ge=100, le=20_000)]


class ContextConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    session_start: bool = True
    prompt: bool = True
    session_start_budget: Budget = 2000
    prompt_budget: Budget = 800
    search_budget: Budget = 2000
    citation_format: Literal["inline", "footnote", "reference"] = "inline"


TRIVIAL_COMMANDS = (
    "ls", "cat", "head", "tail", "pwd", "echo", "cd", "which", "whoami", "date", "wc", "file", "stat",
    "tree", "type", "env", "printenv", "true", "clear", "history", "grep", "rg", "find", "fd", "less",
    "du", "df", "ps", "id", "uname", "hostname", "sleep",
)  # fmt: skip
IGNORED_PATH_PARTS = ("node_modules", ".git", "dist", "build", ".venv", "venv", "__pycache__")


class CaptureConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    max_field_chars: Annotated[int, msgspec.Meta(ge=200)] = 10_000
    max_field_lines: Annotated[int, msgspec.Meta(ge=10)] = 100
    trivial_commands: list[str] = msgspec.field(default_factory=lambda: list(TRIVIAL_COMMANDS))
    trivial_action: Literal["low", "skip"] = "low"
    ignored_path_parts: list[str] = msgspec.field(default_factory=lambda: list(IGNORED_PATH_PARTS))
    skip_tools: list[str] = msgspec.field(default_factory=list)
    notifications: Literal["keep", "skip"] = "keep"


class PrivacyConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    tags: list[Literal["xml", "bracket", "comment"]] = msgspec.field(
        default_factory=lambda: ["xml", "bracket", "comment"]
    )
    marker: Literal["[PRIVATE]", "[REDACTED]", ""] = "[PRIVATE]"
    preserve_lines: bool = False
    unclosed: Literal["redact", "keep"] = "redact"
    secrets: bool = True
    extra_patterns: list[str] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        """An extra pattern that does not compile is a config error, named by its index."""
        for index, pattern in enumerate(self.extra_patterns):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"privacy.extra_patterns[{index}] = {pattern!r} is not a valid regular expression: {exc}"
                ) from None


class EndlessConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    working_set_hours: Positive = 24.0
    working_set_size: Annotated[int, msgspec.Meta(ge=3, le=10_000)] = 100
    consolidate_every: Positive = 3600.0
    consolidate_after_events: Annotated[int, msgspec.Meta(ge=1)] = 100
    consolidate_idle: Positive = 1800.0


class RetentionConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    enabled: bool = True
    max_age_days: Positive = 90.0
    max_importance: Annotated[int, msgspec.Meta(ge=0, le=2)] = 1
    max_db_bytes: Annotated[int, msgspec.Meta(ge=0)] = 2_000_000_000


class SyncConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: str = ""
    machine: str = ""
    interval: Positive = 5.0
    batch: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 500
    pull_teams: bool = True
    teams: dict[str, str] = msgspec.field(default_factory=dict)


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    store: StoreConfig = msgspec.field(default_factory=StoreConfig)
    privacy: PrivacyConfig = msgspec.field(default_factory=PrivacyConfig)
    capture: CaptureConfig = msgspec.field(default_factory=CaptureConfig)
    embedding: EmbeddingConfig = msgspec.field(default_factory=EmbeddingConfig)
    retrieval: RetrievalConfig = msgspec.field(default_factory=RetrievalConfig)
    context: ContextConfig = msgspec.field(default_factory=ContextConfig)
    endless: EndlessConfig = msgspec.field(default_factory=EndlessConfig)
    retention: RetentionConfig = msgspec.field(default_factory=RetentionConfig)
    sync: SyncConfig = msgspec.field(default_factory=SyncConfig)


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
