"""The wire: every message between memd and its clients, and how it is framed.

A frame is a 4-byte big-endian length followed by a msgpack body of that length.
Each body is one tagged Struct: requests carry ``op`` (``"ingest"``, ``"ping"``, ...)
and the protocol version ``v``; replies carry ``op`` too.  ``decode_request`` checks
the version before the shape, so an old client talking to a new daemon gets a
``VersionMismatch`` error reply that says what to do, never a crash.

Evolution rules (msgspec's schema-evolution rules, applied here):

- a new field gets a default, so older peers can omit it;
- fields are never renamed or retyped; a change that needs either bumps
  ``PROTOCOL_VERSION``;
- unknown fields are ignored, so a newer client can talk to an older daemon of the
  same protocol version.

The frame format's constants (``PROTOCOL_VERSION``, ``HEADER_SIZE``, ``MAX_FRAME``) live in
``memd_client/frame.py``, which the hook client shares: it cannot import msgspec, so it
writes the ``Ingest`` map by hand and reads replies with a tiny msgpack reader (there too).
``tests/test_protocol.py`` holds both sides to this schema.

This module does no IO: ``FrameReader`` is fed bytes and hands back whole frames.
"""

from __future__ import annotations

import functools
from typing import Any, Final, Literal

import msgspec

from memd_wire.frame import HEADER_SIZE, MAX_FRAME, PROTOCOL_VERSION

__all__ = [
    "CONTEXT_EVENTS",
    "HOOK_EVENTS",
    "KINDS",
    "NEED_DATA",
    "SECRET_KIND",
    "BadRequest",
    "Cited",
    "ClaudeMemoryMirrored",
    "Collected",
    "CommitsFailing",
    "Continuation",
    "ContinuationResult",
    "DayCount",
    "Detail",
    "Details",
    "DetailsResult",
    "EmbeddingStatus",
    "Endless",
    "EndlessStatus",
    "Entities",
    "EntitiesResult",
    "EntityDetail",
    "EntityInfo",
    "EntityLink",
    "Entry",
    "Error",
    "EventRow",
    "Events",
    "ExportedEvent",
    "ExportedLevel",
    "ExportedUse",
    "Forget",
    "Forgotten",
    "FrameReader",
    "FrameTooLarge",
    "Gc",
    "History",
    "Hit",
    "Import",
    "ImportEvent",
    "Imported",
    "Ingest",
    "Ingested",
    "Latency",
    "LinkProject",
    "ListProjects",
    "MirrorClaudeMemory",
    "Ok",
    "Ping",
    "Pong",
    "ProjectCount",
    "ProjectInfo",
    "ProjectLinked",
    "ProjectList",
    "ProtocolError",
    "Rebuild",
    "Rebuilt",
    "Remember",
    "Remembered",
    "Reply",
    "Request",
    "Restore",
    "Scan",
    "Scanned",
    "Search",
    "SearchResults",
    "SessionInfo",
    "SessionList",
    "Sessions",
    "Share",
    "Shared",
    "Shutdown",
    "SmartResults",
    "SmartSearch",
    "Stats",
    "StatsReport",
    "Status",
    "StatusReport",
    "StorageSizes",
    "SyncReport",
    "TaskInfo",
    "TaskList",
    "Tasks",
    "TeamHit",
    "TeamResults",
    "TeamSearch",
    "Timeline",
    "TimelineResult",
    "Verification",
    "Verify",
    "VersionMismatch",
    "decode_reply",
    "decode_request",
    "encode",
    "encode_frame",
]

HOOK_EVENTS: Final = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
    "Notification",
    "InstructionsLoaded",
)
"""The Claude Code hook events memd knows how to take."""

CONTEXT_EVENTS: Final = frozenset({"SessionStart", "UserPromptSubmit"})
"""Events whose hook output Claude Code adds to the agent's context."""

KINDS = {
    "session_start": "▶",
    "prompt": "💬",
    "memory": "⭐",
    "claude-memory": "🧠",
    "tool": "🔧",
    "tool_error": "❌",
    "tool_use": "·",
    "task_state": "☑",
    "pre_compact": "⧖",
    "compact_summary": "📦",
    "assistant": "🤖",
    "subagent_start": "↳",
    "subagent_stop": "↲",
    "session_end": "■",
    "notification": "🔔",
    "instructions": "📄",
    "session_summary": "📝",
    "snapshot": "📌",
    "consolidated": "🧩",
    "event": "•",
}
"""Every kind a stored event can have (what ``--kind`` and the MCP tools' ``kind`` accept), with
the icon `memctl history` shows for it."""
AGENTS: Final = ("claude-code", "codex", "gemini")
"""The agents memd takes hook events from, by the name their hook commands give (``--agent``;
none is Claude Code): ``memd.capture.agents`` reads each one's events."""
CLAUDE_CODE: Final = AGENTS[0]


# --- errors ---------------------------------------------------------------------------


SECRET_KIND: Final = "secret:"
"""The prefix of a count of secrets by kind among the redaction totals (``secret:github-token``)."""


class ProtocolError(Exception):
    """A peer sent something this protocol cannot accept.  ``code`` goes on the wire."""

    code = "protocol_error"


class FrameTooLarge(ProtocolError):
    """The length prefix announces more than ``MAX_FRAME``: the stream cannot be resynced."""

    code = "frame_too_large"


class BadRequest(ProtocolError):
    """A whole frame arrived but its body is not a valid request."""

    code = "bad_request"


class VersionMismatch(ProtocolError):
    """The client speaks another protocol version than this daemon."""

    code = "version_mismatch"


# --- requests -------------------------------------------------------------------------


class Request(msgspec.Struct, tag_field="op", tag=str.lower, kw_only=True):
    v: int = PROTOCOL_VERSION


class Ingest(Request):
    """One hook event, as the hook client read it from Claude Code's stdin.

    ``payload`` holds the raw bytes; the daemon parses them.  When stdin was larger
    than the hook client's cap, ``truncated`` is set, ``payload`` holds the head and
    ``size`` the full length.
    """

    event: str
    sent_at_ns: int
    payload: bytes
    truncated: bool = False
    size: int = 0
    position: str = ""
    """The uuid of the last record in the session's transcript when the hook fired (the hook
    client reads it; "" for tool events, which have ids of their own, and when there is no
    transcript).  Part of the idempotency key of an event without an id of its own: Claude
    Code fires byte-identical SessionStart(compact) payloads for two compactions in one prompt."""
    claude_memory: str = ""
    """What Claude Code's own memory does in the session, as its environment (which the hook
    client shares) tells: "off" (switched off), "recall" (per-turn recall instead of loading
    ``MEMORY.md``), or "" (its default: ``MEMORY.md`` loaded, unless its settings say
    otherwise).  Sent with SessionStart and UserPromptSubmit."""
    agent: str = ""
    """The agent that ran the hook, as its hook command names it (``--agent codex``); "" for
    Claude Code, whose commands name none (``memd.capture.agents``)."""
    agent_pid: int = 0
    """The process that ran the hook (the hook client's parent: the agent, or a shell the
    daemon sees through), sent with SessionStart: it tells which session a fork was made of
    (``memd.services.agent_process``).  0: not sent."""


class Ping(Request):
    pass


class Status(Request):
    pass


class History(Request):
    session: str | None = None
    limit: int = 20
    kind: str | None = None
    tool: str | None = None
    project: str | None = None
    """A project root, or a part of one (``memd`` matches ``/home/me/src/memd``)."""
    agent: str | None = None
    """Only events of this agent's hooks (``claude-code``, ``codex``, ``gemini``)."""
    before: int | None = None
    """Only events older than this event id: the next page of a listing (its oldest row's id)."""
    after: int | None = None
    """Only events newer than this event id, the first ``limit`` of them (a replay's next page)."""
    since: float | None = None
    until: float | None = None
    """Unix times bounding the event's own timestamp (``until`` excluded)."""
    derived: bool = True
    """Also what memd made (session summaries, snapshots, consolidations): recomputed in place,
    they keep their first place in the order while describing later events."""


class Search(Request):
    """Hybrid search.  Scope: ``project`` if given, else the project of ``cwd``, else all;
    ``all_projects`` overrides both."""

    query: str
    limit: int = 10
    cwd: str | None = None
    project: str | None = None
    """A project root, or a part of one (``memd`` matches ``/home/me/src/memd``)."""
    all_projects: bool = False
    kind: str | None = None
    tool: str | None = None
    session: str | None = None
    path: str | None = None
    """Only events about a file whose path contains this."""
    since: float | None = None
    until: float | None = None
    """Unix times bounding the event's own timestamp."""
    lanes: list[str] = []
    """Run only these lanes (keyword, trigram, substring, context, entity, vector); empty: all."""
    entity: str | None = None
    """Only events that name this entity (a file, person, symbol, error, ticket...: its name or
    an alias, as ``memctl entities`` lists them)."""
    agent: str | None = None
    """Only events of this agent's hooks (``claude-code``, ``codex``, ``gemini``)."""
    caller: str | None = None
    """The session asking (memd's MCP server inside Claude Code; None: a person, through memctl),
    for usage tracking and ranking: its own events since its last compaction are in the model's
    context already, so they rank after every other hit."""


class Rebuild(Request):
    """Recreate derived data from the event log: keyword indexes and/or vectors."""

    fts: bool = False
    vectors: bool = False


class Shutdown(Request):
    """Ask the daemon to stop as it would on SIGTERM."""


class SmartSearch(Search):
    """A search that expands its best hits by itself when it is sure enough (see
    ``memd.retrieve.smart``): timelines and details within ``budget`` tokens."""

    budget: int | None = None
    """Tokens it may spend in all; None: ``[context] search_budget``."""


class Timeline(Request):
    """The events around one memory in its session (layer 2)."""

    id: str
    """A citation id (``mem:Ab3xY9Kq``, ``[mem:Ab3xY9Kq]``, ``Ab3xY9Kq``) or an event id."""
    before: int = 3
    after: int = 3
    caller: str | None = None


class Details(Request):
    """The full stored content of memories (layer 3), within ``budget`` tokens."""

    ids: list[str]
    budget: int | None = None
    """Tokens all the details may take; None: ``[context] search_budget``."""
    caller: str | None = None
    counted: bool = True
    """Count each as a use of the memory (stats, graduation); a listing that only shows them
    (the viewer's session replay) is not one."""


class Verify(Request):
    """Does ``quote`` appear in memory ``id``, and where (``memd.cite.align``)?"""

    id: str
    quote: str
    caller: str | None = None


class Stats(Request):
    """Usage of memories: the most cited first."""

    limit: int = 10
    since: float | None = None
    """Only uses after this Unix time; None: all of them."""
    days: int = 0
    """Events per day and project over this many days (``per_day``); 0: none."""


class Endless(Request):
    """Endless mode: ``enabled`` True or False switches it (persisted); None only asks.
    ``consolidate`` runs a consolidation now."""

    enabled: bool | None = None
    consolidate: bool = False
    cwd: str | None = None
    """A directory of the project whose working set the reply counts."""


class Continuation(Request):
    """The continuation block of a session (``session``), or of the latest session of the
    project of ``cwd``: what a compaction or a resume would give the agent now."""

    session: str | None = None
    cwd: str | None = None


class Tasks(Request):
    """The tasks of a project (``project``, or the one of ``cwd``): open ones, or ``all``."""

    cwd: str | None = None
    project: str | None = None
    all: bool = False


class Remember(Request):
    """Keep ``text`` as a memory someone asked for (MCP ``mem_remember``): an event of kind
    ``memory``, importance 3, privacy-filtered like every event."""

    text: str
    cwd: str | None = None
    """A directory of the project it belongs to; None: no project."""
    session: str | None = None
    """The session asking (Claude Code's session id), if known."""


class Forget(Request):
    """Delete memories for good: the events, everything derived from them, their vectors,
    and the spooled frames that would become them.  Exactly one selector: ``ids``,
    ``session``, ``before`` or ``query`` (``memd.store.forget`` says what each matches).

    ``before`` and ``query`` look in one project: ``project`` if given, else the project of
    ``cwd``, else all; ``all_projects`` overrides both."""

    ids: list[str] = []
    """Citation ids (``mem:Ab3xY9Kq``) or event ids."""
    session: str | None = None
    """Every event of this session."""
    before: float | None = None
    """Every event dated before this Unix time."""
    query: str | None = None
    """Every event holding every word of this text, or the text verbatim in its record."""
    cwd: str | None = None
    project: str | None = None
    all_projects: bool = False
    dry_run: bool = False


class Scan(Request):
    """Check every stored event against today's secret rules (``memctl scan``); with
    ``apply``, redact what they find in place, as a forget removes: rows, keyword indexes,
    vectors embedded again, the old bytes gone from the file (``memd.store.redact``)."""

    apply: bool = False


class Gc(Request):
    """Apply the retention policy now (``memctl gc``; ``memd.store.retention``)."""

    dry_run: bool = False
    vacuum: bool = False
    """Then rewrite the whole file (VACUUM) if it cannot shrink by itself yet (auto_vacuum
    not INCREMENTAL): it switches to incremental vacuum on the way."""


class Sessions(Request):
    """The latest sessions, newest first: of ``project`` (a root or part of one), else of the
    project of ``cwd``, else of all projects."""

    cwd: str | None = None
    project: str | None = None
    limit: int = 20
    agent: str | None = None
    """Only sessions with events of this agent's hooks."""
    before: float | None = None
    """Only sessions last seen before this Unix time: the next page (its last row's ``last_seen``)."""
    id: str | None = None
    """Only this session (the viewer's replay asks for its header)."""


class Entities(Request):
    """What memd knows of the entities events name (``memctl entities``): the most mentioned,
    or, with ``name``, the entities known by it (a name or an alias: ``login.py``, ``Caroline``,
    ``KeyError``) with where they were seen, what they go with and the events that name them.
    Scope as for ``Search``."""

    name: str | None = None
    kind: str | None = None
    """Only entities of this kind (``memd.capture.entities.KINDS``)."""
    cwd: str | None = None
    project: str | None = None
    all_projects: bool = False
    limit: int = 20


class ListProjects(Request):
    """Every project, with its key and the paths of its checkouts (``memctl project list``)."""


class Share(Request):
    """Promote memories to a team (``memctl share``): pushed to the team's scope of the sync
    server, where the team role's members read them."""

    ids: list[str]
    """Citation ids (``mem:Ab3xY9Kq``) or event ids."""
    team: str
    """The team's PostgreSQL role."""


class TeamSearch(Request):
    """Search the team memory on the sync server (``memctl search --team``): the team rows this
    role may read there, by words and, where the server has pgvector, by meaning; memories
    this machine never pulled included."""

    query: str
    limit: int = 10
    team: str | None = None
    """One team's PostgreSQL role; None: every team this role is a member of."""
    cwd: str | None = None
    """Search the project of this directory (by its key: the same project on every machine)."""
    all_projects: bool = False


class MirrorClaudeMemory(Request):
    """Read Claude Code's own memory files into memd (``memctl import``): the memory folder of
    each project root in ``roots`` (every project memd knows when empty), for the Claude Code
    home ``home`` (``~/.claude``).  Changed files replace their memory, deleted ones are
    forgotten, as when a hook finds them."""

    home: str
    roots: list[str] = []


class LinkProject(Request):
    """Make the checkout at ``path`` part of another project (``memctl project link``): the
    project of the checkout at ``other``, or the one of ``key``.  Exactly one of the two.
    A path whose project has memories already brings them along: the projects are merged."""

    path: str
    """An absolute path: a checkout, or a directory in one."""
    other: str | None = None
    """An absolute path: another checkout, or a directory in one."""
    key: str | None = None
    """A project key (``github.com/acme/api``, ``path:/home/me/notes``) or a remote URL."""


class ImportEvent(msgspec.Struct, kw_only=True):
    """One event read back from a transcript, as its hook would have sent it."""

    event: str
    payload: bytes
    at_ns: int
    """When it happened, by the transcript's record (ns since the epoch)."""


class Import(Request):
    """Events from Claude Code transcripts (``memctl import``): captured like live events,
    except that no context is built and an event live capture already stored is skipped.
    ``finished``: sessions whose transcript is done: their summaries are recomputed."""

    events: list[ImportEvent]
    finished: list[str] = []


class ExportedUse(msgspec.Struct, array_like=True):
    """One use of a memory by its id (a ``citation_usage`` row): ``[session, at, how]``."""

    session_id: str | None
    used_at: float
    how: Literal["injected", "resolved", "expanded"]


class ExportedLevel(msgspec.Struct, kw_only=True):
    """A memory's graduation (a ``memory_levels`` row)."""

    level: int
    accesses: int
    best_confidence: float | None
    sessions: int
    last_access: float


class ExportedEvent(msgspec.Struct, kw_only=True):
    """One stored event as ``memctl export`` writes it: content already filtered."""

    cite: str
    idem_key: str
    event: str
    kind: str
    session_id: str | None
    project: str | None
    tool: str | None
    title: str
    text: str
    meta: Any
    importance: int
    client_ts: float
    received_at: float
    payload: str = ""
    """The hook payload as stored: filtered, long fields clipped."""
    uses: list[ExportedUse] = []
    """How it was used by id: what graduation and retention weigh, so they come along."""
    level: ExportedLevel | None = None
    agent: str = CLAUDE_CODE
    """The agent whose hook it came from (``memd.capture.agents``); exports made before it had one
    are Claude Code's."""


class Restore(Request):
    """Exported events into this instance (``memctl import --from-export``): stored as they
    were, with their citation ids when free here."""

    events: list[ExportedEvent]


RequestType = (
    Ingest
    | Entities
    | Ping
    | Status
    | History
    | Search
    | SmartSearch
    | Timeline
    | Details
    | Verify
    | Stats
    | Endless
    | Continuation
    | Tasks
    | Import
    | Restore
    | Remember
    | Forget
    | Scan
    | Gc
    | Sessions
    | Rebuild
    | ListProjects
    | LinkProject
    | Share
    | TeamSearch
    | MirrorClaudeMemory
    | Shutdown
)


# --- replies --------------------------------------------------------------------------


class Reply(msgspec.Struct, tag_field="op", tag=str.lower, kw_only=True):
    pass


class Ingested(Reply):
    """The event is committed (or was already: ``duplicate``).

    ``stdout`` is what the hook client prints for Claude Code, exactly as given.
    """

    event_id: int
    duplicate: bool = False
    stdout: str = ""
    skipped: str = ""
    """Why the event was not stored (memd's own traffic, a noise rule); then ``event_id`` is 0."""


class Pong(Reply):
    version: str
    protocol: int = PROTOCOL_VERSION
    pid: int = 0


class Latency(msgspec.Struct, kw_only=True):
    """Daemon-side handling time of one request kind, in ms: from the whole frame received
    to the reply ready to write (for an ingest, after its commit)."""

    count: int
    p50: float
    p95: float
    p99: float


class EmbeddingStatus(msgspec.Struct, kw_only=True):
    """The vector side of retrieval: model, index and outbox."""

    model: str
    state: str
    """``loading`` | ``indexing`` | ``ready`` | ``unavailable`` (see ``reason``) | ``disabled``."""
    reason: str = ""
    index_vectors: int = 0
    stored_vectors: int = 0
    backlog: int = 0
    """Events waiting for vectors (pending or being embedded), their first or further ones."""
    unembedded: int = 0
    """Events of the backlog without any vector yet: not findable by meaning."""
    oldest_pending_age: float = 0.0
    """Seconds the oldest waiting event has waited."""
    failed: int = 0
    """Events whose embedding failed every retry (``memctl rebuild --vectors`` retries them)."""


class CommitsFailing(msgspec.Struct, kw_only=True):
    """The writer's last commits failed (``memd.store.writer.diagnose``)."""

    since: float
    failures: int
    reason: str
    """``disk full``, ``read-only``, ``locked``, ``I/O error`` or ``error``."""
    fix: str
    detail: str = ""
    """SQLite's own message."""


class SyncReport(msgspec.Struct, kw_only=True):
    """Where sync stands (``memctl sync status``): never the URL's password."""

    server: str
    state: Literal["connecting", "syncing", "failing"]
    pending: int
    """Local events not pushed yet."""
    tombstones: int
    """Forgets not pushed yet."""
    last_push: float | None
    last_pull: float | None
    last_error: str | None
    last_error_at: float | None
    pulled: int
    """Events applied from other machines since the daemon started."""
    lag_ms: float | None = None
    """How long the last applied event took from its push to here."""
    machine: str = ""
    """This machine as the log knows it: its label and its id, ``laptop (m-3fa9…)``."""
    shared_id_seen: float | None = None
    """When rows pushed under this machine's id arrived that it lacked: another data dir
    (a copy of this one) uses the id."""


class StatusReport(Reply):
    version: str
    protocol: int
    pid: int
    uptime: float
    socket: str
    data_dir: str
    database: str
    events: int
    sessions: int
    projects: int
    rejected: int
    spool_backlog: int
    db_bytes: int
    spool_failed: int = 0
    """Spooled frames set aside in the spool's ``failed/``: their replay kept failing (``memctl doctor``)."""
    quarantined: int = 0
    """Events the writer could not store whole (``quarantine``): stored without some derived
    data, or not stored at all (``memctl doctor`` lists them)."""
    embedding: EmbeddingStatus | None = None
    latency_ms: dict[str, Latency] = {}
    redactions: dict[str, int] = {}
    """Totals of what privacy filtering removed (private_spans, secrets, unclosed, chars_removed),
    and the secrets by kind (``SECRET_KIND`` + kind: ``secret:github-token``)."""
    skipped: int = 0
    """Events not stored since the daemon started (memd's own traffic, noise rules)."""
    lone_surrogates: int = 0
    """Events stored with lone UTF-16 surrogates (half an emoji) replaced by U+FFFD; all time."""
    commits_failing: CommitsFailing | None = None
    """Set while the writer's commits fail: events are spooled, not lost, but not stored."""
    connections: int = 0
    """Client connections open now (this one included)."""
    max_connections: int = 0
    """The cap: at it, the connection idle longest makes room (``[daemon] max_connections``,
    kept under the open-files limit)."""
    open_files_limit: int = 0
    sync: SyncReport | None = None
    """None when sync is not configured."""


class EventRow(msgspec.Struct, kw_only=True):
    id: int
    session_id: str | None
    project: str | None
    kind: str
    tool: str | None
    title: str
    importance: int
    received_at: float
    size: int
    event: str = ""
    client_ts: float = 0.0
    cite: str = ""
    """The citation id, without ``mem:``."""
    agent: str = CLAUDE_CODE
    """The agent whose hook sent it (``memd.capture.agents``)."""


class Events(Reply):
    events: list[EventRow]


class Hit(msgspec.Struct, kw_only=True):
    """One line of the index (layer 1)."""

    id: int
    cite: str
    """The citation id, without ``mem:``."""
    kind: str
    tool: str | None
    title: str
    snippet: str
    score: float
    """The ranking score (higher first); comparable only within one result list."""
    confidence: float
    """Calibrated in [0, 1] across queries: how sure memd is that the hit is about the query."""
    session_id: str | None
    received_at: float
    client_ts: float = 0.0
    project: str | None = None
    agent: str = CLAUDE_CODE
    lanes: dict[str, int] = {}
    """Why it was retrieved: each lane that found it, with its rank there (1 = best)."""
    matched: list[str] = []
    """The query's words found in it."""
    similarity: float | None = None
    """Cosine similarity to the query, when the vector lane found it."""
    entities: list[str] = []
    """The query's entities it names (``login.py``) or that said it (``said by Caroline``)."""
    features: dict[str, float] = {}
    """What its confidence was computed from (``memd.retrieve.model``): each lane's rank as
    a score in (0, 1], the similarity, the share of the query's words it holds, and the rest."""
    summary: str = ""
    """One line, <= 100 characters (``memd.retrieve.digest.summary``)."""
    tokens: int = 0
    """Estimated tokens of this memory's details (layer 3): what expanding it costs."""


class SearchResults(Reply):
    query: str
    results: list[Hit]
    mode: str = "keyword"
    """``hybrid`` (keywords and vectors), ``keyword`` (vectors not ready: see ``notice``), or
    ``none`` when nothing was searched (an unknown project, no words: see ``notice``)."""
    notice: str = ""
    scope: str | None = None
    """The project searched, or None for all projects."""


class Entry(msgspec.Struct, kw_only=True):
    """One line of a timeline."""

    id: int
    cite: str
    kind: str
    tool: str | None
    client_ts: float
    preview: str
    """<= 200 characters (``memd.retrieve.digest.preview``)."""
    target: bool = False


class TimelineResult(Reply):
    target: Entry
    session_id: str | None
    entries: list[Entry]
    """Oldest first; the target among them."""


class Detail(msgspec.Struct, kw_only=True):
    """One memory in full (layer 3): its stored, already privacy-filtered content."""

    id: int
    cite: str
    kind: str
    tool: str | None
    title: str
    text: str
    session_id: str | None
    project: str | None
    client_ts: float
    importance: int
    agent: str = CLAUDE_CODE
    files: list[str] = []
    tools: list[str] = []
    previous: str | None = None
    """The citation id of the event before it in its session."""
    next: str | None = None
    tokens: int = 0
    """Estimated tokens of the whole detail as rendered."""
    truncated: bool = False
    """``text`` was cut to fit the budget (``memctl show`` with a larger ``--budget`` has it all)."""
    entities: list[EntityInfo] = []
    """The entities it names (files, people, errors...), the most mentioned first; filled for
    ``Details``, not for the details a search or a prompt's context expands."""


class DetailsResult(Reply):
    details: list[Detail]
    missing: list[str] = []
    """Ids asked for that resolve to no memory."""
    omitted: list[str] = []
    """Ids found but left out: the budget was spent."""
    tokens: int = 0


class SmartResults(Reply):
    index: SearchResults
    rule: str
    """Which expansion rule fired: ``single``, ``clear_winner``, ``cluster``, ``low_confidence``, ``index_only``."""
    reason: str
    timelines: list[TimelineResult] = []
    details: list[Detail] = []
    tokens: int = 0
    budget: int = 0


class Verification(Reply):
    cite: str
    event_id: int
    found: bool
    start: int
    end: int
    confidence: float
    method: str
    """``exact`` | ``normalized`` | ``fuzzy`` | ``none``."""
    quote_hash: str
    matched: str = ""
    """The source text of the span found, exactly as stored."""


class Cited(msgspec.Struct, kw_only=True):
    id: int
    cite: str
    kind: str
    title: str
    uses: int
    injected: int = 0
    resolved: int = 0
    expanded: int = 0
    sessions: int = 0
    """Distinct sessions that used it."""
    last_used: float = 0.0
    level: int = 0
    """Its graduation level, 0-4."""


class ProjectCount(msgspec.Struct, kw_only=True):
    root: str | None
    """The project's root directory; None for events without a project (no cwd)."""
    events: int


class DayCount(msgspec.Struct, kw_only=True):
    """Events of one project on one local day (``YYYY-MM-DD``)."""

    day: str
    project: str | None
    events: int


class UsageDay(msgspec.Struct, kw_only=True):
    """What memd's context did on one local day (``YYYY-MM-DD``)."""

    day: str
    injected: int = 0
    resolved: int = 0
    expanded: int = 0
    tokens_saved: int = 0
    """Estimated tokens of the lines left out of memd's blocks because Claude Code's own memory
    had given them (``ClaudeMemoryUse.tokens``, that day)."""


class StorageSizes(msgspec.Struct, kw_only=True):
    """Bytes on disk."""

    database: int
    """The SQLite file (every table and index, the keyword indexes included)."""
    wal: int
    """Its write-ahead log, not yet checkpointed into it."""
    keyword_index: int
    """The stemmed word index (``events_fts``), part of ``database``."""
    trigram_index: int
    """The trigram index of CJK text (``events_cjk``), part of ``database``."""
    context_index: int = 0
    """The index of each event's words with its neighbours' (``events_ctx``, its text
    included), part of ``database``."""
    vector_index: int
    """The usearch index file(s) beside the database."""
    measured: str
    """How the keyword indexes were sized: ``dbstat`` (their pages, exact) or
    ``estimate`` (their data blocks only: this SQLite has no ``dbstat`` table)."""


class ClaudeMemoryUse(msgspec.Struct, kw_only=True):
    files: int = 0
    """Memory files mirrored as ``claude-memory`` events."""
    answers: int = 0
    """Hook answers that left something out."""
    lines: int = 0
    tokens: int = 0
    """Estimated tokens of what was left out."""


class StatsReport(Reply):
    most_cited: list[Cited]
    usage: dict[str, int] = {}
    """Uses by kind (injected, resolved, expanded) in the window."""
    levels: dict[str, int] = {}
    """Memories per graduation level, L0 to L4 (``memd.capture.graduation``)."""
    kinds: dict[str, int] = {}
    """Events per kind, derived kinds (summaries, snapshots, consolidations) included; all time."""
    agents: dict[str, int] = {}
    """Events per agent (Claude Code, Codex CLI, Gemini CLI); all time."""
    projects: list[ProjectCount] = []
    """The projects with the most events, most first."""
    project_count: int = 0
    sizes: StorageSizes | None = None
    embedding: EmbeddingStatus | None = None
    """The model, the vector outbox (backlog, failures) and the vectors stored and indexed."""
    redactions: dict[str, int] = {}
    """Totals of what privacy filtering removed, as in ``StatusReport``."""
    hook_latency_ms: dict[str, Latency] = {}
    """Ingest handling time per hook event since the daemon started (see ``memd.metrics``)."""
    per_day: list[DayCount] = []
    """Events per day and project over the last ``Stats.days`` days (the viewer's chart)."""
    usage_per_day: list[UsageDay] = []
    """Uses and tokens saved per day over the last ``Stats.days`` days, oldest first (days with none left out)."""
    claude_memory: ClaudeMemoryUse | None = None
    """Claude Code's own memory: its files memd mirrors, and the context memd left out since
    Claude Code had given the same (``memd.services.repeats``); all time."""


class EndlessStatus(Reply):
    enabled: bool
    consolidated: int = 0
    """Memories a consolidation asked for made."""
    working_set: int = 0
    """Events in the working set of the project of ``cwd``."""


class ContinuationResult(Reply):
    session_id: str | None
    block: str
    """The ``<memory-context>`` block, ``""`` when the session has nothing to carry on."""


class TaskInfo(msgspec.Struct, kw_only=True):
    id: int
    content: str
    status: str
    active_form: str = ""
    cite: str = ""
    """The citation id of the event that last changed it."""
    session_id: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    changes: int = 0
    """Status changes recorded (memctl tasks --json has them; history is in the database)."""


class TaskList(Reply):
    project: str | None
    tasks: list[TaskInfo]


class Imported(Reply):
    stored: int = 0
    duplicates: int = 0
    """Stored before: by an earlier import, or by live capture."""
    skipped: int = 0
    """Not memories by capture's rules (memd's own tools, noise rules)."""
    refused: int = 0
    """Not readable as an event (the reason is in the daemon's log)."""
    cites_kept: int = 0
    """Restore: events that kept their citation id."""
    expired: int = 0
    """Import: low-importance events older than the retention age, which the next
    retention pass would remove: not stored."""
    max_age_days: float = 0.0
    """Import: the retention age applied (``[retention] max_age_days``); 0 when retention is off."""


class Remembered(Reply):
    event_id: int
    cite: str
    duplicate: bool = False
    """The same text was already kept for this session and project."""


class Forgotten(Reply):
    """What a ``Forget`` deleted (or, with ``dry_run``, would delete)."""

    events: list[EventRow]
    """The memories that go, as they were, in event order: all of them, or the first 1,000
    (``total`` counts them all)."""
    total: int = 0
    kinds: dict[str, int] = {}
    """How many of each kind go."""
    selector: str = "ids"
    scope: str | None = None
    """The project a ``before`` or ``query`` forget looked in; None: all projects."""
    spooled: int = 0
    """Spooled frames, not yet stored, that matched and were deleted (would be)."""
    derived: int = 0
    """Consolidated memories deleted because they summed up one of them."""
    refreshed: int = 0
    """Sessions whose summary and snapshot were recomputed without them."""
    vectors: int = 0
    missing: list[str] = []
    """Ids that name no memory."""
    dry_run: bool = False


class Scanned(Reply):
    """What a ``Scan`` found (and, with ``apply``, redacted)."""

    checked: int = 0
    """Events read."""
    events: list[EventRow] = []
    """The events holding a secret, titles redacted, in event order: the first 1,000
    (``total`` counts them all)."""
    total: int = 0
    kinds: dict[str, int] = {}
    """The secrets found, by kind (``github-token``, ``password``...)."""
    applied: bool = False
    redacted: int = 0
    """Events rewritten (fewer than ``total`` only when a derived one was replaced meanwhile)."""
    refreshed: int = 0
    """Sessions whose summary and snapshot were recomputed from the redacted events."""
    vectors: int = 0
    """Vectors deleted, to be embedded again from the redacted text."""


class Collected(Reply):
    """What a ``Gc`` removed (or, with ``dry_run``, would remove)."""

    events: list[EventRow] = []
    """The events that go, in event order: the first 1,000 (``total`` counts them all)."""
    total: int = 0
    kinds: dict[str, int] = {}
    aged: int = 0
    """Of ``total``: older than ``[retention] max_age_days``."""
    capped: int = 0
    """Of ``total``: younger, removed oldest first to bring the data under ``max_db_bytes``."""
    derived: int = 0
    refreshed: int = 0
    vectors: int = 0
    bytes_before: int = 0
    """The database file and its WAL."""
    bytes_after: int = 0
    used_bytes: int = 0
    """The pages in use (the file without its free pages): what ``max_db_bytes`` caps."""
    max_db_bytes: int = 0
    max_age_days: float = 0.0
    auto_vacuum: str = "none"
    """none | full | incremental: whether the file gives freed pages back by itself."""
    vacuumed: bool = False
    """The whole file was rewritten (``vacuum``)."""
    last_run: float | None = None
    """When retention last ran before this (None: never)."""
    dry_run: bool = False


class SessionInfo(msgspec.Struct, kw_only=True):
    id: str
    project: str | None
    first_seen: float
    last_seen: float
    events: int
    summary: str = ""
    agents: list[str] = []
    """The agents whose hooks sent its events."""


class SessionList(Reply):
    scope: str | None
    """The project listed, or None for all projects."""
    sessions: list[SessionInfo]


class EntityInfo(msgspec.Struct, kw_only=True):
    name: str
    kind: str
    mentions: int
    """Events that name it (in the scope asked for)."""


class EntityLink(msgspec.Struct, kw_only=True):
    name: str
    kind: str
    how: str
    """``with`` (named in the same events), ``tests`` (a test and the file it tests), ``fix``
    (an error and a file edited after it in its session)."""
    count: int


class EntityDetail(msgspec.Struct, kw_only=True):
    name: str
    kind: str
    aliases: list[str]
    mentions: int
    sessions: int
    first_seen: float
    last_seen: float
    related: list[EntityLink]
    events: list[Entry]
    """The newest events that name it, each with its citation id."""


class EntitiesResult(Reply):
    scope: str | None
    """The project looked in, or None for all projects."""
    entities: list[EntityInfo] = []
    """Without a name: the most mentioned."""
    details: list[EntityDetail] = []
    """With a name: every entity known by it."""
    notice: str = ""


class ProjectInfo(msgspec.Struct, kw_only=True):
    id: int
    root: str
    """The path people know it by: the first it was seen at (on this machine or another)."""
    name: str
    key: str | None
    """What its checkouts have in common: the remote (``github.com/acme/api``), else
    ``path:<root>``; None for a project left without one (``memd.store.projects``)."""
    paths: list[str]
    """Where it is checked out on this machine."""
    events: int
    first_seen: float
    last_seen: float
    sessions: int = 0
    agents: dict[str, int] = {}
    """Its events per agent (``claude-code``, ``codex``, ``gemini``)."""


class ProjectList(Reply):
    projects: list[ProjectInfo]


class ProjectLinked(Reply):
    project: ProjectInfo
    """The project the path belongs to now."""
    merged: int | None = None
    """The id of the project merged into it (gone now), if the path had one of its own."""
    events: int = 0
    """Events moved over from the merged project."""


class TeamHit(msgspec.Struct, kw_only=True):
    """One memory found on the team server."""

    cite: str
    """Its citation id (made from its key: the one every machine holding it shows)."""
    kind: str
    title: str
    snippet: str
    """The start of its text (<= 300 characters), filtered by this machine's secret rules too."""
    score: float
    """Higher first; comparable only within one result list."""
    similarity: float | None = None
    """Cosine similarity to the query, when found by meaning."""
    team: str
    shared_by: str
    """The PostgreSQL role that shared it."""
    project: str | None = None
    """Its project's root on the machine that shared it."""
    session_id: str | None = None
    client_ts: float = 0.0
    here: bool = False
    """This machine holds it too: ``memctl show`` opens it."""


class TeamResults(Reply):
    query: str
    results: list[TeamHit]
    mode: str = "keyword"
    """``hybrid`` (words and meaning), ``keyword`` (words: ``notice`` says why not meaning),
    ``none`` (nothing searched: ``notice`` says why)."""
    notice: str = ""
    scope: str | None = None
    """The project key searched, or None for every project the teams share."""


class Shared(Reply):
    shared: int
    """Memories newly promoted (one shared before counts once)."""
    missing: list[str] = []
    """The ids that name no memory."""
    syncing: bool = True
    """False: sync is off here; they go to the team once it is set up."""


class ClaudeMemoryMirrored(Reply):
    folders: int = 0
    """Memory folders found (and looked at)."""
    files: int = 0
    stored: int = 0
    """Memories stored: new files, and new versions of changed ones."""
    forgotten: int = 0
    """Memories of deleted files, and old versions of changed ones."""


class Rebuilt(Reply):
    fts_rows: int = 0
    vectors_queued: int = 0


class Ok(Reply):
    pass


class Error(Reply):
    code: str
    message: str


ReplyType = (
    Ingested
    | Pong
    | StatusReport
    | Events
    | SearchResults
    | SmartResults
    | TimelineResult
    | DetailsResult
    | Verification
    | StatsReport
    | EndlessStatus
    | ContinuationResult
    | TaskList
    | Imported
    | Remembered
    | Forgotten
    | Scanned
    | Collected
    | SessionList
    | EntitiesResult
    | ProjectList
    | ProjectLinked
    | Shared
    | TeamResults
    | ClaudeMemoryMirrored
    | Rebuilt
    | Ok
    | Error
)


# --- codec ----------------------------------------------------------------------------


class _Header(msgspec.Struct):
    v: Any = None


_encoder = msgspec.msgpack.Encoder()
_header_decoder = msgspec.msgpack.Decoder(_Header)


@functools.cache
def _decoder(kind: Any) -> msgspec.msgpack.Decoder[Any]:
    """The decoder of ``kind``, made at its first use.  Making one compiles every Struct the
    type reaches: ~3 ms for each whole union, which the daemon pays once and a client that
    expects one kind of reply never pays (it decodes that kind, or ``Error``)."""
    return msgspec.msgpack.Decoder(kind)


def encode(message: Request | Reply) -> bytes:
    return _encoder.encode(message)


def encode_frame(message: Request | Reply) -> bytes:
    body = _encoder.encode(message)
    if len(body) > MAX_FRAME:
        raise FrameTooLarge(f"frame of {len(body)} bytes exceeds the {MAX_FRAME}-byte limit")
    return len(body).to_bytes(HEADER_SIZE, "big") + body


def decode_request(body: bytes) -> RequestType:
    """Decode one request body, checking the protocol version first."""
    try:
        version = _header_decoder.decode(body).v
    except msgspec.DecodeError as exc:
        raise BadRequest(f"not a msgpack map with an 'op' field: {exc}") from None
    if version is None:
        raise BadRequest("request has no protocol version field 'v'")
    if version != PROTOCOL_VERSION:
        raise VersionMismatch(
            f"client speaks protocol {version!r}, this daemon speaks {PROTOCOL_VERSION}; "
            "restart memd and reinstall the hooks from the same memd version"
        )
    try:
        request: RequestType = _decoder(RequestType).decode(body)
        return request
    except msgspec.DecodeError as exc:
        raise BadRequest(str(exc)) from None


def decode_reply(body: bytes, expect: type[Reply] | None = None) -> ReplyType:
    """Decode one reply body: an ``expect`` or an ``Error`` when ``expect`` is given (a reply
    of another kind is then decoded again as any reply, for the caller to name it)."""
    try:
        reply: ReplyType = _decoder(ReplyType if expect is None else expect | Error).decode(body)
        return reply
    except msgspec.DecodeError as exc:
        if expect is not None:
            return decode_reply(body)
        raise BadRequest(f"malformed reply from daemon: {exc}") from None


# --- framing (sans-IO) ----------------------------------------------------------------


class _NeedData:
    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()
"""Returned by ``FrameReader.next_frame`` when no whole frame is buffered yet."""


class FrameReader:
    """Splits a byte stream into frame bodies, without doing any IO.

    Feed it with ``receive_data`` and pull bodies with ``next_frame`` until it returns
    ``NEED_DATA``.  An announced length above ``max_frame`` raises ``FrameTooLarge``
    before anything of that size is buffered.
    """

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buffer = bytearray()
        self._max_frame = max_frame

    def receive_data(self, data: bytes) -> None:
        self._buffer += data

    @property
    def buffered(self) -> int:
        """Bytes held that do not yet form a whole frame (nonzero at EOF = truncated frame)."""
        return len(self._buffer)

    def next_frame(self) -> bytes | _NeedData:
        if len(self._buffer) < HEADER_SIZE:
            return NEED_DATA
        length = int.from_bytes(self._buffer[:HEADER_SIZE], "big")
        if length > self._max_frame:
            raise FrameTooLarge(f"peer announced a {length}-byte frame; the limit is {self._max_frame}")
        end = HEADER_SIZE + length
        if len(self._buffer) < end:
            return NEED_DATA
        body = bytes(self._buffer[HEADER_SIZE:end])
        del self._buffer[:end]
        return body
