"""``memctl``: look into and drive memd from the shell.

Every command prints for humans by default and, with ``--json``, one JSON object
with stable keys for scripts.  When the daemon is needed but not running, the
command says so in one line with the fix and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import msgspec

from memd import __version__
from memd.capture.events import KINDS
from memd.capture.prepare import SECRET_KIND
from memd.cite import FORMATS, label
from memd.context import detail_text, index_line, timeline_text
from memd.protocol import (
    HOOK_EVENTS,
    Collected,
    Continuation,
    ContinuationResult,
    Details,
    DetailsResult,
    Endless,
    EndlessStatus,
    EventRow,
    Events,
    Forget,
    Forgotten,
    Gc,
    History,
    Hit,
    Ok,
    Ping,
    Pong,
    Rebuild,
    Rebuilt,
    Scan,
    Scanned,
    Search,
    SearchResults,
    SessionList,
    Sessions,
    Shutdown,
    SmartResults,
    SmartSearch,
    Stats,
    StatsReport,
    Status,
    StatusReport,
    TaskList,
    Tasks,
    Timeline,
    TimelineResult,
    Verification,
    Verify,
)

from . import export, importer, install, launcher, paths, service
from .autostart import is_locked
from .frame import PROTOCOL_VERSION
from .rpc import Client, DaemonError, DaemonUnavailable
from .times import parse_time

__all__ = ["main"]

HOOK_SCRIPT = launcher.HOOK_SCRIPT
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
NOT_RUNNING_FIX = "start it with `memctl daemon start` (or run `memd` in a terminal)"


class CommandError(Exception):
    """Ends the command with this message on stderr and ``exit_code``."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _emit(args: argparse.Namespace, data: dict[str, Any], human: str) -> None:
    print(json.dumps(data, ensure_ascii=False) if args.json else human)


def _plain(reply: msgspec.Struct) -> dict[str, Any]:
    data = msgspec.to_builtins(reply)
    data.pop("op", None)
    return data


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _client(args: argparse.Namespace, timeout: float | None = None) -> Client:
    try:
        return Client(args.paths.socket) if timeout is None else Client(args.paths.socket, timeout=timeout)
    except DaemonUnavailable as exc:
        raise CommandError(f"{exc}; {NOT_RUNNING_FIX}") from None


def _offline_events(database: str) -> int | None:
    """The event count read straight from the database, for when the daemon is down."""
    if not os.path.exists(database):
        return 0
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1.0)
        try:
            return conn.execute("SELECT count(*) FROM events").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return None


# --- commands ---------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    from memd.services.spool import backlog

    try:
        with Client(args.paths.socket) as client:
            report = client.call(Status(), StatusReport)
    except DaemonUnavailable as exc:
        data = {
            "running": False,
            "version": __version__,
            "protocol": PROTOCOL_VERSION,
            "socket": args.paths.socket,
            "data_dir": args.paths.data_dir,
            "database": args.paths.database,
            "events": _offline_events(args.paths.database),
            "spool_backlog": backlog(args.paths.spool_dir),
        }
        human = "\n".join(
            [
                f"memd is not running ({exc})",
                f"  fix:           {NOT_RUNNING_FIX}",
                f"  socket:        {data['socket']}",
                f"  data dir:      {data['data_dir']}",
                f"  events:        {data['events'] if data['events'] is not None else 'unreadable'}",
                f"  spool backlog: {data['spool_backlog']} (ingested when the daemon starts)",
            ]
        )
        _emit(args, data, human)
        return 1
    data = {"running": True, **_plain(report)}
    failing = report.commits_failing
    warning = (
        [
            f"  COMMITS FAILING since {_when(failing.since)} ({failing.failures} in a row): {failing.reason}."
            f" Fix: {failing.fix}.",
            f"  (SQLite: {failing.detail})",
        ]
        if failing is not None
        else []
    )
    lines = [
        f"memd {report.version} is running (pid {report.pid}, up {report.uptime:.0f} s, protocol {report.protocol})",
        *warning,
        f"  socket:        {report.socket}",
        f"  data dir:      {report.data_dir}",
        f"  events:        {report.events} in {report.sessions} sessions, {report.projects} projects",
        f"  rejected:      {report.rejected} payloads; skipped {report.skipped} events since start",
        f"  repaired:      {report.lone_surrogates} events had lone surrogates (half an emoji) replaced by U+FFFD",
        "  privacy:       " + (_privacy(report.redactions) or "nothing removed"),
        f"  spool backlog: {report.spool_backlog}"
        + (f"; {report.spool_failed} set aside after failed replays (memctl doctor)" if report.spool_failed else ""),
        f"  quarantined:   {report.quarantined} events not stored whole (memctl doctor)",
        f"  connections:   {report.connections} open of at most {report.max_connections}"
        f" (open files limit {report.open_files_limit})",
        f"  database:      {report.db_bytes / 1e6:.1f} MB",
    ]
    if (e := report.embedding) is not None:
        lines.append(f"  embedding:     {e.model}: {e.state}" + (f" ({e.reason})" if e.reason else ""))
        lines.append(
            f"  vectors:       {e.index_vectors} in the index, {e.stored_vectors} stored; outbox backlog {e.backlog}"
            f" ({e.unembedded} without any vector yet, oldest {e.oldest_pending_age:.0f} s), {e.failed} failed"
        )
    for op, lat in sorted(report.latency_ms.items()):
        lines.append(f"  {op + ' ms:':<15}p50 {lat.p50}  p95 {lat.p95}  p99 {lat.p99}  (n={lat.count})")
    _emit(args, data, "\n".join(lines))
    return 1 if failing is not None else 0


def _privacy(redactions: dict[str, int]) -> str:
    """What the privacy filter removed, all time: the totals, then the secrets by kind."""
    kinds = {name.removeprefix(SECRET_KIND): n for name, n in redactions.items() if name.startswith(SECRET_KIND)}
    totals = [(name, n) for name, n in redactions.items() if not name.startswith(SECRET_KIND)]
    line = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in totals)
    if kinds:
        line += (
            " (" + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))) + ")"
        )
    return line


def cmd_ping(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    with _client(args) as client:
        pong = client.call(Ping(), Pong)
    ms = (time.perf_counter() - started) * 1000
    _emit(
        args,
        {**_plain(pong), "ms": round(ms, 3)},
        f"pong from memd {pong.version} (pid {pong.pid}) in {ms:.1f} ms",
    )
    return 0


IMPORTANCE = {1: "·", 2: "•", 3: "!"}


def cmd_history(args: argparse.Namespace) -> int:
    request = History(session=args.session, limit=args.limit, kind=args.kind, tool=args.tool, project=args.project)
    with _client(args) as client:
        reply = client.call(request, Events)
    lines = [
        f"{KINDS.get(e.kind, KINDS['event'])} [{label(e.cite)}] {_when(e.client_ts or e.received_at)}"
        f" {IMPORTANCE.get(e.importance, ' ')} {(e.session_id or '-')[:8]}  {e.title}"
        for e in reply.events
    ]
    _emit(args, _plain(reply), "\n".join(lines) if lines else "no events match")
    return 0


def _index_lines(hits: list[Hit], explain: bool) -> list[str]:
    lines = []
    for hit in hits:
        lines.append(f"{KINDS.get(hit.kind, KINDS['event'])} {index_line(hit)}")
        if explain:
            lanes = ", ".join(f"{lane} #{rank}" for lane, rank in hit.lanes.items())
            similarity = f"; similarity {hit.similarity:.2f}" if hit.similarity is not None else ""
            lines.append(f"     why: {lanes}; matched {', '.join(hit.matched) or 'no words'}{similarity}")
    return lines


def cmd_search(args: argparse.Namespace) -> int:
    options = dict(
        query=args.query,
        limit=args.limit,
        cwd=os.getcwd(),
        project=args.project,
        all_projects=args.all_projects,
        kind=args.kind,
        tool=args.tool,
        session=args.session,
        path=args.path,
        since=args.since,
        until=args.until,
    )
    with _client(args) as client:
        if args.smart:
            smart = client.call(SmartSearch(**options, budget=args.budget), SmartResults)
            reply = smart.index
        else:
            reply = client.call(Search(**options), SearchResults)
    where = reply.scope or "all projects"
    data = _plain(smart) if args.smart else _plain(reply)
    if reply.mode == "none":
        _emit(args, data, f"nothing searched in {where}: {reply.notice}")
        return 0
    lines = [f"{reply.mode} search in {where}" + (f" ({reply.notice})" if reply.notice else "")]
    lines += _index_lines(reply.results, args.lanes)
    if not reply.results:
        lines.append(f"no matches for {args.query!r}")
    if args.smart:
        lines.append(f"\nrule {smart.rule}: {smart.reason} (~{smart.tokens} of {smart.budget} tokens)")
        lines += ["", *(timeline_text(t) for t in smart.timelines)] if smart.timelines else []
        lines += ["", *(detail_text(d) for d in smart.details)] if smart.details else []
    else:
        lines.append("\nexpand: memctl timeline mem:ID · memctl show mem:ID ...")
    _emit(args, data, "\n".join(lines))
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    with _client(args) as client:
        reply = client.call(Timeline(id=args.id, before=args.before, after=args.after), TimelineResult)
    _emit(args, _plain(reply), timeline_text(reply))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    with _client(args) as client:
        reply = client.call(Details(ids=args.ids, budget=args.budget), DetailsResult)
    parts = [detail_text(d, args.format) for d in reply.details]
    if reply.omitted:
        parts.append(f"not shown, over the {args.budget}-token budget: {' '.join(reply.omitted)} (raise --budget)")
    if parts or args.json:
        _emit(args, _plain(reply), "\n\n".join(parts))
    if reply.missing:
        raise CommandError(f"no memory {', '.join(map(repr, reply.missing))}: use ids from memctl search")
    return 0


def cmd_cite_verify(args: argparse.Namespace) -> int:
    with _client(args) as client:
        reply = client.call(Verify(id=args.id, quote=args.quote), Verification)
    where = f"[{label(reply.cite)}]"
    if reply.found:
        human = (
            f"found in {where} ({reply.method}, confidence {reply.confidence:.2f})"
            f" at characters {reply.start}-{reply.end}:\n> {reply.matched}"
        )
    else:
        human = f"not found in {where}: no span matches the quote closely enough (memctl show {label(reply.cite)})"
    _emit(args, _plain(reply), human)
    return 0 if reply.found else 1


def _bytes(n: int) -> str:
    """A size for people: 812 B, 4.0 KB, 566.2 MB, 1.4 GB (powers of 1000, as `memctl status`)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def cmd_stats(args: argparse.Namespace) -> int:
    with _client(args) as client:
        reply = client.call(Stats(limit=args.limit, since=args.since), StatsReport)
    lines = [
        f"events: {sum(reply.kinds.values())} in {reply.project_count} projects; by kind: "
        + (", ".join(f"{kind} {n}" for kind, n in reply.kinds.items()) or "none")
    ]
    lines += [f"  {p.events:>8}  {p.root or '(no project)'}" for p in reply.projects]
    lines.append("graduation levels: " + ", ".join(f"{level} {n}" for level, n in reply.levels.items()))
    if (s := reply.sizes) is not None:
        lines.append(
            f"on disk: database {_bytes(s.database)} + WAL {_bytes(s.wal)}; in it, keyword index"
            f" {_bytes(s.keyword_index)}, trigram index {_bytes(s.trigram_index)} ({s.measured});"
            f" vector index file {_bytes(s.vector_index)}"
        )
    if (e := reply.embedding) is not None:
        lines.append(
            f"vectors: {e.stored_vectors} stored, {e.index_vectors} in the index ({e.model}: {e.state});"
            f" outbox backlog {e.backlog} ({e.unembedded} without any vector yet, oldest"
            f" {e.oldest_pending_age:.0f} s), {e.failed} failed"
        )
    lines.append("privacy filter removed: " + (_privacy(reply.redactions) or "nothing"))
    lines.append("hook latency in the daemon, ms (since it started):" if reply.hook_latency_ms else "no hooks yet")
    for hook, lat in sorted(reply.hook_latency_ms.items()):
        lines.append(f"  {hook:<19}p50 {lat.p50}  p95 {lat.p95}  p99 {lat.p99}  (n={lat.count})")
    window = f"since {_when(args.since)}" if args.since else "all time"
    lines.append(f"memory use ({window}): " + ", ".join(f"{n} {how}" for how, n in reply.usage.items()))
    if reply.most_cited:
        lines.append("most cited:")
    for c in reply.most_cited:
        lines.append(
            f"  [{label(c.cite)}] L{c.level} {c.uses:>4} uses ({c.injected} injected, {c.resolved} resolved,"
            f" {c.expanded} expanded; {c.sessions} sessions; last {_when(c.last_used)})  {c.kind}: {c.title}"
        )
    _emit(args, _plain(reply), "\n".join(lines))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the installation (memd_client/doctor/); exit 1 when something is broken."""
    from . import doctor  # imports the embedding engine when checking the model: only here

    findings = doctor.examine(
        args.paths, home=os.path.expanduser("~"), cwd=os.getcwd(), python=os.path.abspath(sys.executable)
    )
    _emit(args, doctor.report(findings), doctor.render(findings))
    return 1 if doctor.failed(findings) else 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    everything = not args.fts and not args.vectors
    request = Rebuild(fts=args.fts or everything, vectors=args.vectors or everything)
    with _client(args, timeout=3600.0) as client:
        reply = client.call(request, Rebuilt)
    lines = []
    if request.fts:
        lines.append(f"keyword indexes rebuilt from {reply.fts_rows} events")
    if request.vectors:
        lines.append(f"{reply.vectors_queued} events queued for embedding (progress: memctl status)")
    _emit(args, _plain(reply), "\n".join(lines))
    return 0


def _time(text: str) -> float:
    try:
        return parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _at_least(minimum: int) -> Callable[[str], int]:
    """An integer flag of ``minimum`` or more: a clear error, not a silent clamp by the daemon."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {minimum} or more")
        return value

    return parse


TASK_MARK = {"in_progress": "▶", "pending": "○", "completed": "✓", "dropped": "✗"}


def cmd_tasks(args: argparse.Namespace) -> int:
    with _client(args) as client:
        reply = client.call(Tasks(cwd=os.getcwd(), project=args.project, all=args.all), TaskList)
    where = reply.project or "this directory"
    lines = [f"{'tasks' if args.all else 'open tasks'} of {where}:"]
    for t in reply.tasks:
        lines.append(
            f"  {TASK_MARK.get(t.status, '?')} [{label(t.cite)}] {t.status:<11} {t.content}"
            f"  ({_when(t.updated_at)}, {t.changes} change{'s' if t.changes != 1 else ''})"
        )
    if not reply.tasks:
        lines.append("  none")
    _emit(args, _plain(reply), "\n".join(lines))
    return 0


def cmd_endless(args: argparse.Namespace) -> int:
    with _client(args) as client:
        if args.action == "snapshot":
            reply = client.call(Continuation(session=args.session, cwd=os.getcwd()), ContinuationResult)
            human = reply.block or f"session {reply.session_id} has no working state to carry on yet"
            _emit(args, _plain(reply), human)
            return 0
        enabled = {"on": True, "off": False}.get(args.action)
        request = Endless(enabled=enabled, consolidate=args.action == "consolidate", cwd=os.getcwd())
        status = client.call(request, EndlessStatus)
    if args.action == "consolidate":
        _emit(
            args,
            _plain(status),
            f"consolidated {status.consolidated} new memor{'y' if status.consolidated == 1 else 'ies'}",
        )
        return 0
    state = "on" if status.enabled else "off"
    what = (
        "sessions start where the last one stood (compact, resume, fork; clear and startup when seamless)"
        if status.enabled
        else "sessions start with the standard block of the project's memories"
    )
    _emit(args, _plain(status), f"endless mode is {state}: {what}; working set here: {status.working_set} events")
    return 0


def _ping(socket_path: str) -> Pong | None:
    try:
        with Client(socket_path, timeout=2.0) as client:
            return client.call(Ping(), Pong)
    except (DaemonUnavailable, DaemonError):
        return None


def cmd_daemon_start(args: argparse.Namespace) -> int:
    launcher.record(args.paths)
    running = _ping(args.paths.socket)
    if running:
        _emit(args, {"started": False, "pid": running.pid}, f"memd is already running (pid {running.pid})")
        return 0
    command = [sys.executable, "-m", "memd", "--no-stderr-log", *args.daemon_flags]
    os.makedirs(args.paths.state_dir, mode=0o700, exist_ok=True)
    errors_file = os.path.join(args.paths.state_dir, "memd-start.err")
    with open(errors_file, "wb") as errors:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        pong = _ping(args.paths.socket)
        if pong:  # the errors file stays: startup errors and crashes only, the log lines go to the log file
            _emit(args, {"started": True, "pid": pong.pid}, f"memd started (pid {pong.pid})")
            return 0
        if process.poll() is not None:
            with open(errors_file, encoding="utf-8", errors="replace") as f:
                reason = f.read().strip().splitlines()
            raise CommandError(
                f"memd exited with status {process.returncode}: {reason[-1] if reason else 'no message'}"
                f" (log: {args.paths.log_file})"
            )
        time.sleep(0.05)
    raise CommandError(f"memd did not answer within {START_TIMEOUT:.0f} s (log: {args.paths.log_file})")


def cmd_daemon_stop(args: argparse.Namespace) -> int:
    try:
        with Client(args.paths.socket) as client:
            client.call(Shutdown(), Ok)
    except DaemonUnavailable:
        _emit(args, {"stopped": False}, "memd is not running")
        return 0
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        if not is_locked(args.paths.lock_file):  # released only when the process has exited
            _emit(args, {"stopped": True}, "memd stopped")
            return 0
        time.sleep(0.05)
    raise CommandError(f"memd did not stop within {STOP_TIMEOUT:.0f} s")


def hook_command(event: str, socket_flag: str | None = None) -> str:
    """The shell command Claude Code should run for ``event``."""
    argv = [os.path.abspath(sys.executable), "-I", "-S", HOOK_SCRIPT, event]
    if socket_flag:
        argv += ["--socket", os.path.abspath(socket_flag)]
    return shlex.join(argv)


def _settings_path(args: argparse.Namespace) -> str:
    if args.settings:
        return os.path.abspath(args.settings)
    base = os.path.expanduser("~") if args.scope == "user" else os.getcwd()
    return os.path.join(base, ".claude", "settings.json")


def _edit_config(
    args: argparse.Namespace, path: str, change: Callable[[dict[str, Any]], dict[str, Any]], what: str, nothing: str
) -> int:
    """Apply ``change`` to the JSON config at ``path``: a diff with --dry-run, else a backup
    and an atomic write; ``what`` says what the file now holds, ``nothing`` why it is left alone."""
    try:
        settings, old = install.read(path)
        changed = change(settings)
    except install.SettingsError as exc:
        raise CommandError(f"{exc} (nothing was changed)") from None
    new = install.render(changed)
    data: dict[str, Any] = {"settings": path, "changed": changed != settings, "dry_run": args.dry_run, "backup": None}
    if changed == settings:  # then the file is left as it is, formatting included
        _emit(args, data, f"{path} {nothing}; nothing to do")
        return 0
    if args.dry_run:
        data["diff"] = install.diff(path, old, new)
        _emit(args, data, data["diff"] + f"\n(dry run: {path} was not changed)")
        return 0
    data["backup"] = install.write(path, old, new)
    saved = f"; the previous version is in {data['backup']}" if data["backup"] else ""
    _emit(args, data, f"{what} {path}{saved}")
    return 0


def cmd_install(args: argparse.Namespace) -> int:
    """Merge memd's hooks into Claude Code's settings (or, for uninstall, take them out)."""
    path = _settings_path(args)
    if args.command == "uninstall":
        return _edit_config(args, path, install.without, "memd's hooks are out of", "has no memd hooks")
    if not args.dry_run:
        launcher.record(args.paths)
    return _edit_config(
        args,
        path,
        lambda settings: install.merged(settings, lambda event: hook_command(event, args.socket)),
        f"memd's hooks ({len(install.HOOKS)} events; Claude Code reads them when a session starts) are in",
        "has memd's hooks already",
    )


def _mcp_config(args: argparse.Namespace) -> str:
    if args.claude_desktop:
        return install.desktop_config(sys.platform, os.path.expanduser("~"), dict(os.environ))
    if args.scope == "project":
        return os.path.join(os.getcwd(), ".mcp.json")
    return os.path.join(os.path.expanduser("~"), ".claude.json")


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve MCP on stdin/stdout, or register memd's server with Claude Code or Desktop."""
    if args.action == "serve":
        from .mcp.server import main as serve

        return serve(args.paths)
    path = _mcp_config(args)
    client = "Claude Desktop (quit and reopen it)" if args.claude_desktop else "Claude Code (new sessions)"
    if args.action == "uninstall":
        return _edit_config(args, path, install.without_server, "memd's MCP server is out of", "has no memd server")
    entry = install.server_entry(os.path.abspath(sys.executable), args.paths.socket if args.socket else None)
    return _edit_config(
        args,
        path,
        lambda config: install.with_server(config, entry),
        f"memd's MCP server (tools mem_search, mem_timeline, mem_details, ...) is registered for {client} in",
        "has memd's MCP server already",
    )


FORGET_TIMEOUT = 600.0
"""Seconds memctl waits for a forget or gc: they rewrite the keyword indexes (~1 s at 100k
events here), may replay task lists (seconds), and a ``gc --vacuum`` rewrites the whole file."""
LISTED = 40
"""Events a forget or gc prints before saying how many more."""


def _event_lines(events: list[EventRow], total: int) -> list[str]:
    lines = [
        f"[{label(e.cite)}] {e.kind} {_when(e.client_ts)} {(e.session_id or '-')[:8]}  {e.title}"
        for e in events[:LISTED]
    ]
    if total > len(lines):
        lines.append(f"… and {total - len(lines)} more (--json lists the first {len(events)})")
    return lines


def _by_kind(kinds: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in kinds.items())


def _forget_request(args: argparse.Namespace, dry_run: bool) -> Forget:
    return Forget(
        ids=args.ids,
        session=args.session,
        before=args.before,
        query=args.query,
        cwd=None if args.all_projects else os.getcwd(),
        project=args.project,
        all_projects=args.all_projects,
        dry_run=dry_run,
    )


def _forget_summary(reply: Forgotten) -> str:
    """``3 memories (2 prompt, 1 tool) and 1 consolidated memory built from them``."""
    kinds = f" ({_by_kind(reply.kinds)})" if reply.selector != "ids" and reply.kinds else ""
    derived = f" and {reply.derived} consolidated memories built from them" if reply.derived else ""
    spooled = f"; {reply.spooled} spooled events not yet stored" if reply.spooled else ""
    return f"{reply.total} {'memory' if reply.total == 1 else 'memories'}{kinds}{derived}{spooled}"


def cmd_forget(args: argparse.Namespace) -> int:
    given = [args.ids, args.session is not None, args.before is not None, args.query is not None]
    if sum(map(bool, given)) != 1:
        raise CommandError("say what to forget, one way: ID..., --session S, --before DATE or --query Q", exit_code=2)
    if (args.project or args.all_projects) and (args.ids or args.session is not None):
        raise CommandError("--project and --all-projects go with --before and --query", exit_code=2)
    with _client(args, timeout=FORGET_TIMEOUT) as client:
        preview = client.call(_forget_request(args, dry_run=True), Forgotten)
        missing = f"no memory {', '.join(map(repr, preview.missing))}" if preview.missing else ""
        if not preview.total and not preview.spooled:
            if preview.selector == "ids":
                raise CommandError((missing or "nothing to forget") + ": use ids from memctl search or history")
            where = f" in {preview.scope}" if preview.scope else ""
            raise CommandError(f"nothing to forget: no memory matches{where}")
        lines = _event_lines(preview.events, preview.total)
        where = [] if preview.selector in ("ids", "session") else [f"in {preview.scope or 'all projects'}"]
        if args.dry_run:
            head = f"would forget {_forget_summary(preview)}:"
            _emit(args, _plain(preview), "\n".join([head, *where, *lines, missing]).rstrip())
            return 0
        if not args.yes:
            summary = _forget_summary(preview)
            if not sys.stdin.isatty():
                raise CommandError(f"this would forget {summary}; add --yes to confirm (or --dry-run to list them)")
            print("\n".join([f"about to forget {summary} for good:", *where, *lines]))
            if input("forget them? [y/N] ").strip().lower() not in ("y", "yes"):
                raise CommandError("nothing was forgotten")
        reply = client.call(_forget_request(args, dry_run=False), Forgotten)
    done = f"{reply.vectors} vectors; {reply.refreshed} session summaries recomputed"
    human = [f"forgot {_forget_summary(reply)} ({done})", *_event_lines(reply.events, reply.total), missing]
    _emit(args, _plain(reply), "\n".join(human).rstrip())
    return 0


def _scan_kinds(reply: Scanned) -> str:
    """``2 github-token, 1 password``."""
    return ", ".join(f"{n} {kind}" for kind, n in sorted(reply.kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def _scan_summary(reply: Scanned) -> str:
    """``3 of 1200 events hold secrets today's rules find (2 github-token, 1 password)``."""
    verb = "holds" if reply.total == 1 else "hold"
    return f"{reply.total} of {reply.checked} events {verb} secrets today's rules find ({_scan_kinds(reply)})"


def cmd_scan(args: argparse.Namespace) -> int:
    with _client(args, timeout=FORGET_TIMEOUT) as client:
        preview = client.call(Scan(apply=False), Scanned)
        if not preview.total:
            _emit(args, _plain(preview), f"checked {preview.checked} events: no secret that today's rules find")
            return 0
        lines = _event_lines(preview.events, preview.total)
        if args.dry_run:
            _emit(args, _plain(preview), "\n".join([_scan_summary(preview) + ":", *lines]))
            return 0
        if not args.yes:
            if not sys.stdin.isatty():
                print("\n".join([_scan_summary(preview) + ":", *lines]))
                raise CommandError("nothing was redacted: add --yes to redact them (or --dry-run to only list them)")
            print("\n".join([_scan_summary(preview) + ":", *lines]))
            if input("redact them in place, for good? [y/N] ").strip().lower() not in ("y", "yes"):
                raise CommandError("nothing was redacted")
        reply = client.call(Scan(apply=True), Scanned)
    human = [
        f"redacted {reply.redacted} of {reply.checked} events ({_scan_kinds(reply)})",
        f"  {reply.vectors} vectors deleted, to be embedded again from the redacted text;"
        f" {reply.refreshed} session summaries recomputed; the old bytes are gone from the database file",
        *_event_lines(reply.events, reply.total),
    ]
    _emit(args, _plain(reply), "\n".join(human))
    return 0


def cmd_gc(args: argparse.Namespace) -> int:
    with _client(args, timeout=FORGET_TIMEOUT) as client:
        reply = client.call(Gc(dry_run=args.dry_run, vacuum=args.vacuum), Collected)
    kinds = f" ({_by_kind(reply.kinds)})" if reply.kinds else ""
    verb = "would remove" if reply.dry_run else "removed"
    lines = [f"{verb} {reply.total} events{kinds}"]
    if reply.total:
        why = f"  {reply.aged} older than {reply.max_age_days:g} days"
        if reply.capped:
            why += f"; {reply.capped} younger ones, oldest first, to get under the {_bytes(reply.max_db_bytes)} cap"
        lines.append(why)
        if reply.derived:
            lines.append(f"  and {reply.derived} consolidated memories built from them")
        if not reply.dry_run:
            lines.append(f"  {reply.vectors} vectors; {reply.refreshed} session summaries recomputed")
    if reply.dry_run:
        size = f"database: {_bytes(reply.bytes_before)} ({_bytes(reply.used_bytes)} in use)"
    else:
        size = f"database: {_bytes(reply.bytes_before)} → {_bytes(reply.bytes_after)}"
        size += " (rewritten)" if reply.vacuumed else ""
    lines.append(f"{size}; cap {_bytes(reply.max_db_bytes) if reply.max_db_bytes else 'none'}")
    if reply.auto_vacuum != "incremental":
        lines.append(
            "the file does not shrink by itself yet (auto_vacuum off): `memctl gc --vacuum` rewrites it once,"
            " which blocks writes for a few seconds per GB"
        )
    previous = _when(reply.last_run) if reply.last_run else "never"
    lines.append(f"previous pass: {previous}")
    lines += _event_lines(reply.events, reply.total)
    _emit(args, _plain(reply), "\n".join(lines))
    return 0


def _transcript_files(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The transcripts ``memctl import`` was asked for, with their subagents'."""
    base = importer.claude_projects(dict(os.environ))
    if args.session:
        if not os.path.isfile(args.session):
            raise CommandError(f"no transcript at {args.session}")
        return list(importer.session_files(os.path.abspath(args.session)))
    if args.all:
        if not os.path.isdir(base):
            raise CommandError(f"no Claude Code transcripts in {base} (is this the right HOME or CLAUDE_CONFIG_DIR?)")
        return [f for name in sorted(os.listdir(base)) for f in importer.transcripts(os.path.join(base, name))]
    project = os.path.abspath(args.project or os.getcwd())
    folder = os.path.join(base, importer.slug(project))
    if not os.path.isdir(folder):
        raise CommandError(f"no Claude Code transcripts for {project} (looked in {folder}); --all imports all")
    return list(importer.transcripts(folder))


def cmd_import(args: argparse.Namespace) -> int:
    started = time.monotonic()
    if args.from_export:
        try:
            with _client(args, timeout=600.0) as client:
                totals = importer.restore_file(client, args.from_export)
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        kept = f"; {totals.result.cites_kept} kept their citation ids" if totals.result.stored else ""
        _emit(args, _plain(totals.result), f"restored from {args.from_export}: {totals.line()}{kept}")
        return 0
    files = _transcript_files(args)
    if args.since is not None:  # a file last written before --since holds nothing newer
        files = [f for f in files if os.path.getmtime(f[0]) >= args.since]
    with _client(args, timeout=600.0) as client:
        if args.force:  # each session's events go first, live-captured ones too: the transcript has them all
            sessions = [os.path.basename(path).removesuffix(".jsonl") for path, agent in files if not agent]
            forgotten = sum(client.call(Forget(session=s), Forgotten).total for s in sessions)
            print(f"memctl: --force: forgot {forgotten} events of {len(sessions)} sessions first", file=sys.stderr)
        totals = importer.import_files(client, files, args.since)
    elapsed = time.monotonic() - started
    rate = f" in {elapsed:.1f} s ({totals.events / elapsed:.0f} events/s)" if elapsed > 0 else ""
    data = _plain(totals.result) | {
        "files": totals.files,
        "sessions": len(totals.sessions),
        "events": totals.events,
        "records": totals.records,
        "corrupt_lines": totals.corrupt,
        "repaired_lines": totals.repaired,
        "seconds": round(elapsed, 3),
    }
    more = "; summaries and embeddings follow in the background (memctl status)" if totals.result.stored else ""
    note = totals.retention_note()
    _emit(args, data, f"imported {totals.line()}{rate}{more}" + (f"\n{note}" if note else ""))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    if not os.path.exists(args.paths.database):
        raise CommandError(f"no database at {args.paths.database}: nothing to export")
    try:
        count = export.export(args.paths.database, sys.stdout.buffer, args.project, args.since)
        sys.stdout.flush()
    except export.NoSuchProject as exc:
        raise CommandError(str(exc)) from None
    except BrokenPipeError:
        raise
    except OSError as exc:  # a full disk, a closed terminal: the file is incomplete
        raise CommandError(f"cannot write the export ({exc.strerror or exc}): the output is incomplete") from None
    except sqlite3.Error as exc:
        raise CommandError(f"cannot read {args.paths.database} ({exc}): memctl doctor checks it") from None
    print(f"memctl: exported {count} events", file=sys.stderr)
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    cwd = None if args.all_projects else os.getcwd()
    with _client(args) as client:
        reply = client.call(Sessions(cwd=cwd, project=args.project, limit=args.limit), SessionList)
    lines = [f"latest sessions of {reply.scope or 'all projects'}, newest first:"]
    for s in reply.sessions:
        where = f"  {s.project}" if reply.scope is None and s.project else ""
        lines.append(f"{s.id}  {_when(s.first_seen)} → {_when(s.last_seen)[11:16]}  {s.events:>5} events{where}")
        if s.summary:
            lines.append(f"    {s.summary}")
    if not reply.sessions:
        lines.append("no sessions recorded" + (" here (--all-projects lists every project's)" if reply.scope else ""))
    _emit(args, _plain(reply), "\n".join(lines))
    return 0


def cmd_launcher(args: argparse.Namespace) -> int:
    path = launcher.record(args.paths) if args.record else launcher.record_path(args.paths)
    recorded = os.path.exists(path)
    human = f"{'recorded' if args.record else 'record'}: {path}" + ("" if recorded else " (none yet: --record)")
    _emit(args, {"record": path, "exists": recorded}, human)
    return 0


def cmd_service(args: argparse.Namespace) -> int:
    """Install, remove or inspect memd as a user service (memd_client/service.py)."""
    try:
        if args.action == "install":
            report = service.install(args.paths, idle_exit=args.idle_exit, dry_run=args.dry_run)
        elif args.action == "uninstall":
            report = service.uninstall(args.paths, dry_run=args.dry_run)
        else:
            report = service.status(args.paths)
    except service.ServiceError as exc:
        raise CommandError(str(exc)) from None
    _emit(args, report.data, report.text)
    return report.exit_code


def cmd_spool(args: argparse.Namespace) -> int:
    """The spool: what waits for the daemon, and the frames set aside after failed replays
    (their events are kept there until put back or deleted)."""
    from memd.services import spool

    from .doctor.findings import plural  # the doctor's wording, imported with it: only here

    where = args.paths.spool_dir
    if args.action == "retry":
        moved = spool.retry_failed(where)
        human = f"put {plural(len(moved), 'frame')} back into {where}: memd replays them at its next drain"
        _emit(args, {"retried": len(moved), "spool_dir": where}, human if moved else "no frame is set aside")
        return 0
    if args.action == "delete":
        aside = spool.failed(where)
        if not aside:
            _emit(args, {"deleted": 0, "spool_dir": where}, "no frame is set aside")
            return 0
        if not args.yes:
            folder = os.path.join(where, spool.FAILED_DIR)
            what = f"{plural(len(aside), 'frame')} set aside in {folder} (their events are lost)"
            if not sys.stdin.isatty():
                raise CommandError(f"this would delete {what}; add --yes to confirm")
            if input(f"delete {what}? [y/N] ").strip().lower() not in ("y", "yes"):
                raise CommandError("nothing was deleted")
        deleted = spool.delete_failed(where)
        _emit(args, {"deleted": deleted, "spool_dir": where}, f"deleted {plural(deleted, 'frame')} set aside")
        return 0
    waiting, aside = spool.pending(where), spool.failed(where)
    data = {"spool_dir": where, "pending": len(waiting), "failed": [os.path.basename(p) for p in aside]}
    lines = [f"{where}: {plural(len(waiting), 'frame')} waiting for the daemon, {len(aside)} set aside"]
    lines += [
        f"  {spool.FAILED_DIR}/{os.path.basename(p)} ("
        + (f"{plural(spool.attempts(p), 'failed replay')})" if spool.attempts(p) else "never an event: not retried)")
        for p in aside
    ]
    if aside:
        lines.append("  memctl spool retry puts them back (after an upgrade that fixes the cause); memctl spool delete")
    _emit(args, data, "\n".join(lines))
    return 0


def cmd_hook_command(args: argparse.Namespace) -> int:
    if args.event not in HOOK_EVENTS:
        raise CommandError(f"unknown hook event {args.event!r}; one of: {', '.join(HOOK_EVENTS)}", exit_code=2)
    command = hook_command(args.event, args.socket)
    _emit(args, {"event": args.event, "command": command}, command)
    return 0


# --- argument parsing -------------------------------------------------------------------


def _common(defaults: bool) -> argparse.ArgumentParser:
    """The options every command takes, before or after its name.  A subcommand's copy has
    no defaults (``SUPPRESS``): argparse would otherwise overwrite ``memctl --socket X
    status``'s ``--socket`` with the subcommand's default."""
    common = argparse.ArgumentParser(add_help=False)
    unset = {} if defaults else {"default": argparse.SUPPRESS}
    common.add_argument("--json", action="store_true", help="print one JSON object (stable keys)", **unset)
    common.add_argument("--socket", help="daemon socket (default: $MEMD_SOCKET or $XDG_RUNTIME_DIR/memd/)", **unset)
    common.add_argument("--data-dir", help="data directory (default: $MEMD_DATA_DIR or $XDG_DATA_HOME/memd)", **unset)
    return common


def _parser() -> argparse.ArgumentParser:
    common = _common(defaults=False)
    parser = argparse.ArgumentParser(prog="memctl", description="Inspect and drive memd.", parents=[_common(True)])
    parser.add_argument("--version", action="version", version=f"memctl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    command("status", cmd_status, "is the daemon up; version, paths, counts, spool backlog, latencies")
    command("ping", cmd_ping, "check that the daemon answers, and how fast")
    p = command("history", cmd_history, "the latest events, oldest first (! high, • medium, · low importance)")
    p.add_argument("--session", help="only this session id")
    p.add_argument("--kind", choices=sorted(KINDS), help="only events of this kind")
    p.add_argument("--tool", help="only calls of this tool (Bash, Edit, mcp__server__tool, ...)")
    p.add_argument("--project", help="only this project (its root path, or a part of it)")
    p.add_argument("--limit", type=_at_least(1), default=20, help="how many events (default 20)")
    p = command("search", cmd_search, "hybrid (keyword + meaning) search, best match first, in this project")
    p.add_argument("query")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--project", help="search this project (its root path, or a part of it)")
    scope.add_argument("--all-projects", action="store_true", help="search every project")
    p.add_argument("--kind", choices=sorted(KINDS), help="only events of this kind")
    p.add_argument("--tool", help="only calls of this tool")
    p.add_argument("--session", help="only this session id")
    p.add_argument("--path", help="only events about a file whose path contains this")
    p.add_argument("--since", type=_time, help="only events after this (2026-11-21, 12h, 7d)")
    p.add_argument("--until", type=_time, help="only events before this")
    p.add_argument("--limit", type=_at_least(1), default=10, help="how many hits (default 10)")
    p.add_argument("--lanes", action="store_true", help="show why each hit was retrieved")
    p.add_argument("--smart", action="store_true", help="expand sure hits by themselves: timeline, details")
    p.add_argument("--budget", type=_at_least(1), default=2000, help="tokens --smart may spend (default 2000)")
    p = command("timeline", cmd_timeline, "the events around a memory in its session (→ marks it)")
    p.add_argument("id", help="a citation id (mem:Ab3xY9) or an event number")
    p.add_argument("--before", type=_at_least(0), default=3, help="events before it (default 3)")
    p.add_argument("--after", type=_at_least(0), default=3, help="events after it (default 3)")
    p = command("show", cmd_show, "memories in full: content, files, session, neighbours, citation")
    p.add_argument("ids", nargs="+", metavar="ID", help="citation ids (mem:Ab3xY9) or event numbers")
    p.add_argument("--budget", type=_at_least(1), default=20_000, help="tokens to show at most (default 20000)")
    p.add_argument("--format", choices=FORMATS, default="inline", help="how the source is cited (default inline)")
    p = command("cite", lambda a: 2, "check a quote against the memory it cites")
    cite = p.add_subparsers(dest="cite_command", required=True, metavar="ACTION")
    v = cite.add_parser("verify", parents=[common], help="is QUOTE in memory ID, and where")
    v.set_defaults(handler=cmd_cite_verify)
    v.add_argument("id", help="a citation id (mem:Ab3xY9)")
    v.add_argument("quote")
    p = command("tasks", cmd_tasks, "the open tasks of this project, carried across its sessions")
    p.add_argument("--all", action="store_true", help="completed and dropped ones too")
    p.add_argument("--project", help="another project (its root path, or a part of it)")
    p = command(
        "endless", cmd_endless, "endless mode: on, off, status; snapshot (a session's continuation), consolidate (now)"
    )
    p.add_argument("action", choices=["on", "off", "status", "snapshot", "consolidate"])
    p.add_argument("--session", help="snapshot: this session (default: the latest of this project)")
    p = command(
        "stats", cmd_stats, "what memd holds (by kind, project, level; sizes; backlog) and how memories are used"
    )
    p.add_argument("--limit", type=_at_least(1), default=10, help="how many projects and cited memories (default 10)")
    p.add_argument("--since", type=_time, help="only uses after this (2026-11-21, 7d); counts are all time")
    p = command("doctor", cmd_doctor, "check this installation, daemon up or down; each problem with its fix")
    p = command("rebuild", cmd_rebuild, "recreate the keyword indexes and/or the vectors from the event log")
    p.add_argument("--fts", action="store_true", help="the keyword indexes (both FTS tables)")
    p.add_argument("--vectors", action="store_true", help="every vector: re-embed all events in the background")
    p = command("daemon", lambda a: 2, "start or stop the daemon in the background")
    p.add_argument("action", choices=["start", "stop"])
    for name, what in (
        ("install", "merge memd's hooks into Claude Code's settings.json (keeps every other hook and key)"),
        ("uninstall", "take exactly memd's hooks out of Claude Code's settings.json"),
    ):
        p = command(name, cmd_install, what)
        where = p.add_mutually_exclusive_group()
        where.add_argument("--settings", help="this settings file (default: by --scope)")
        where.add_argument(
            "--scope",
            choices=["user", "project"],
            default="user",
            help="user: ~/.claude/settings.json (default); project: ./.claude/settings.json",
        )
        p.add_argument("--dry-run", action="store_true", help="show the change as a diff, write nothing")
    p = command("mcp", cmd_mcp, "memd's MCP server: serve it on stdio, or register it with Claude Code or Desktop")
    p.add_argument("action", nargs="?", choices=["serve", "install", "uninstall"], default="serve")
    client = p.add_mutually_exclusive_group()
    client.add_argument("--claude-code", action="store_true", help="Claude Code (default): ~/.claude.json")
    client.add_argument("--claude-desktop", action="store_true", help="Claude Desktop's config file")
    p.add_argument(
        "--scope", choices=["user", "project"], default="user", help="Claude Code: user (default) or ./.mcp.json"
    )
    p.add_argument("--dry-run", action="store_true", help="show the change as a diff, write nothing")
    p = command(
        "forget", cmd_forget, "delete memories for good (by id, session, date or words), with what was built from them"
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="citation ids (mem:Ab3xY9) or event numbers")
    p.add_argument("--session", help="every event of this session")
    p.add_argument("--before", type=_time, metavar="DATE", help="every event before this (2026-01-01, 90d)")
    p.add_argument("--query", metavar="Q", help="every event with every word of Q, or Q verbatim in its record")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--project", help="--before/--query: in this project (default: this directory's)")
    scope.add_argument("--all-projects", action="store_true", help="--before/--query: in every project")
    p.add_argument("--dry-run", action="store_true", help="only list what would be forgotten")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p = command(
        "scan", cmd_scan, "check what is stored against today's secret rules and redact what they find, for good"
    )
    p.add_argument("--dry-run", action="store_true", help="only list the events holding secrets (titles redacted)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p = command("gc", cmd_gc, "apply the retention policy now: old low-importance events go ([retention])")
    p.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    p.add_argument(
        "--vacuum", action="store_true", help="then rewrite the file once so that it shrinks (auto_vacuum off)"
    )
    p = command("import", cmd_import, "Claude Code transcripts (this project's by default) or an export, into memd")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--project", help="this project's transcripts (its path; default: the current directory)")
    what.add_argument("--all", action="store_true", help="every project's transcripts")
    what.add_argument("--session", metavar="FILE", help="one transcript file (and its subagents')")
    what.add_argument("--from-export", metavar="FILE", help="a file written by memctl export")
    p.add_argument("--since", type=_time, help="only events after this (2026-11-01, 30d)")
    p.add_argument("--force", action="store_true", help="forget each session's events first, then import it again")
    p = command("export", cmd_export, "memories as JSON lines on stdout (filtered content, citation ids, metadata)")
    p.add_argument("--project", help="only this project (its root path, or a part of it)")
    p.add_argument("--since", type=_time, help="only events after this (2026-11-01, 30d)")
    p = command("sessions", cmd_sessions, "the latest sessions of this project, newest first, with their summaries")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--project", help="another project (its root path, or a part of it)")
    scope.add_argument("--all-projects", action="store_true", help="every project")
    p.add_argument("--limit", type=_at_least(1), default=20, help="how many sessions (default 20)")
    p = command("launcher", cmd_launcher, "where the Claude Code plugin's launcher finds this installation")
    p.add_argument("--record", action="store_true", help="record this installation (install and daemon start do)")
    p = command("service", cmd_service, "run memd as a user service: systemd socket activation, or launchd")
    p.add_argument("action", choices=["install", "uninstall", "status"])
    p.add_argument("--dry-run", action="store_true", help="show what would be written and run; change nothing")
    p.add_argument(
        "--idle-exit",
        type=float,
        default=service.IDLE_EXIT,
        metavar="SECONDS",
        help=f"systemd: memd exits after this long without work, restarted on demand (default {service.IDLE_EXIT})",
    )
    p = command("spool", cmd_spool, "events waiting for the daemon; frames set aside after failed replays")
    p.add_argument("action", nargs="?", choices=["status", "retry", "delete"], default="status")
    p.add_argument("--yes", action="store_true", help="delete: do not ask for confirmation")
    p = command("hook-command", cmd_hook_command, "print the command line Claude Code should run for a hook event")
    p.add_argument("event", metavar="EVENT", help=", ".join(HOOK_EVENTS))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.paths = paths.resolve(socket=args.socket, data_dir=args.data_dir)
    args.daemon_flags = [
        *(["--socket", args.paths.socket] if args.socket else []),
        *(["--data-dir", args.paths.data_dir] if args.data_dir else []),
    ]
    if args.command == "daemon":
        args.handler = cmd_daemon_start if args.action == "start" else cmd_daemon_stop
    try:
        return args.handler(args)
    except BrokenPipeError:  # `memctl ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 0
    except CommandError as exc:
        print(f"memctl: {exc}", file=sys.stderr)
        return exc.exit_code
    except DaemonUnavailable as exc:
        print(f"memctl: {exc}; {NOT_RUNNING_FIX}", file=sys.stderr)
        return 1
    except DaemonError as exc:
        print(f"memctl: the daemon refused the request ({exc.code}): {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a file that is missing or not ours: the reason, not a traceback
        print(f"memctl: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
