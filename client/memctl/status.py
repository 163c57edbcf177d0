"""``memctl status``, ``ping`` and ``stats``: is memd up, how fast does it answer, and what
does it hold.  ``status`` answers with the daemon down too, from the files."""

from __future__ import annotations

import argparse
import os
import time

from .common import NOT_RUNNING_FIX, connect, emit, human_bytes, plain, when
from .parsing import Command, at_least, moment

__all__ = ["PING", "STATS", "STATUS"]


def identity(version: str) -> str:
    """An embedding version (``model:dimensions:weights``) as a person reads it."""
    model, _, rest = version.partition(":")
    dim, _, weights = rest.partition(":")
    if not dim.isdigit():
        return version
    return f"{model} ({dim} dimensions" + (f", weights {weights})" if weights else ")")


def status_arguments(p: argparse.ArgumentParser) -> None:
    p.set_defaults(handler=run_status)


def run_status(args: argparse.Namespace) -> int:
    from memd.protocol import Status, StatusReport

    from ..rpc import Client, DaemonUnavailable

    try:
        with Client(args.paths.socket) as client:
            report = client.call(Status(), StatusReport)
    except DaemonUnavailable as exc:
        return _not_running(args, str(exc))
    data = {"running": True, **plain(report)}
    failing = report.commits_failing
    warning = (
        [
            f"  COMMITS FAILING since {when(failing.since)} ({failing.failures} in a row): {failing.reason}."
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
        "  privacy:       " + (privacy(report.redactions) or "nothing removed"),
        f"  spool backlog: {report.spool_backlog}"
        + (f"; {report.spool_failed} set aside after failed replays (memctl doctor)" if report.spool_failed else ""),
        f"  quarantined:   {report.quarantined} events not stored whole (memctl doctor)",
        f"  connections:   {report.connections} open of at most {report.max_connections}"
        f" (open files limit {report.open_files_limit})",
        f"  database:      {report.db_bytes / 1e6:.1f} MB",
    ]
    if (e := report.embedding) is not None:
        lines.append(f"  embedding:     {identity(e.model)}: {e.state}" + (f" ({e.reason})" if e.reason else ""))
        lines.append(
            f"  vectors:       {e.index_vectors} in the index, {e.stored_vectors} stored; outbox backlog {e.backlog}"
            f" ({e.unembedded} without any vector yet, oldest {e.oldest_pending_age:.0f} s), {e.failed} failed"
        )
    if (sync := report.sync) is not None:
        lines.append(
            f"  sync:          {sync.state} with {sync.server};"
            f" {sync.pending} events and {sync.tombstones} forgets to push"
            + (f"; last error: {sync.last_error}" if sync.last_error else "")
        )
    for op, lat in sorted(report.latency_ms.items()):
        lines.append(f"  {op + ' ms:':<15}p50 {lat.p50}  p95 {lat.p95}  p99 {lat.p99}  (n={lat.count})")
    emit(args, data, "\n".join(lines))
    return 1 if failing is not None else 0


def _not_running(args: argparse.Namespace, why: str) -> int:
    """What ``status`` says with the daemon down: the paths, and what the files hold."""
    from memd import __version__
    from memd_wire.frame import PROTOCOL_VERSION
    from memd_wire.spooled import backlog

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
            f"memd is not running ({why})",
            f"  fix:           {NOT_RUNNING_FIX}",
            f"  socket:        {data['socket']}",
            f"  data dir:      {data['data_dir']}",
            f"  events:        {data['events'] if data['events'] is not None else 'unreadable'}",
            f"  spool backlog: {data['spool_backlog']} (ingested when the daemon starts)",
        ]
    )
    emit(args, data, human)
    return 1


def _offline_events(database: str) -> int | None:
    """The event count read straight from the database; None when it cannot be read."""
    import sqlite3

    from memd.store.inspect import count_events, reading

    if not os.path.exists(database):
        return 0
    try:
        with reading(database, timeout=1.0) as conn:
            return count_events(conn)
    except sqlite3.Error:
        return None


def privacy(redactions: dict[str, int]) -> str:
    """What the privacy filter removed, all time: the totals, then the secrets by kind."""
    from memd.protocol import SECRET_KIND

    kinds = {name.removeprefix(SECRET_KIND): n for name, n in redactions.items() if name.startswith(SECRET_KIND)}
    totals = [(name, n) for name, n in redactions.items() if not name.startswith(SECRET_KIND)]
    line = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in totals)
    if kinds:
        line += (
            " (" + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))) + ")"
        )
    return line


def ping_arguments(p: argparse.ArgumentParser) -> None:
    p.set_defaults(handler=run_ping)


def run_ping(args: argparse.Namespace) -> int:
    from memd.protocol import Ping, Pong

    started = time.perf_counter()
    with connect(args) as client:
        pong = client.call(Ping(), Pong)
    ms = (time.perf_counter() - started) * 1000
    emit(
        args,
        {**plain(pong), "ms": round(ms, 3)},
        f"pong from memd {pong.version} (pid {pong.pid}) in {ms:.1f} ms",
    )
    return 0


def stats_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=at_least(1), default=10, help="how many projects and cited memories (default 10)")
    p.add_argument("--since", type=moment, help="only uses after this (2026-11-21, 7d); counts are all time")
    p.set_defaults(handler=run_stats)


def run_stats(args: argparse.Namespace) -> int:
    from memd.cite import label
    from memd.protocol import Stats, StatsReport

    with connect(args) as client:
        reply = client.call(Stats(limit=args.limit, since=args.since), StatsReport)
    lines = [
        f"events: {sum(reply.kinds.values())} in {reply.project_count} projects; by kind: "
        + (", ".join(f"{kind} {n}" for kind, n in reply.kinds.items()) or "none")
        + ("; by agent: " + ", ".join(f"{agent} {n}" for agent, n in reply.agents.items()) if reply.agents else "")
    ]
    lines += [f"  {p.events:>8}  {p.root or '(no project)'}" for p in reply.projects]
    lines.append("graduation levels: " + ", ".join(f"{level} {n}" for level, n in reply.levels.items()))
    if (s := reply.sizes) is not None:
        lines.append(
            f"on disk: database {human_bytes(s.database)} + WAL {human_bytes(s.wal)}; in it, keyword index"
            f" {human_bytes(s.keyword_index)}, trigram index {human_bytes(s.trigram_index)},"
            f" context index {human_bytes(s.context_index)} ({s.measured});"
            f" vector index file {human_bytes(s.vector_index)}"
        )
    if (e := reply.embedding) is not None:
        lines.append(
            f"vectors: {e.stored_vectors} stored, {e.index_vectors} in the index ({e.model}: {e.state});"
            f" outbox backlog {e.backlog} ({e.unembedded} without any vector yet, oldest"
            f" {e.oldest_pending_age:.0f} s), {e.failed} failed"
        )
    lines.append("privacy filter removed: " + (privacy(reply.redactions) or "nothing"))
    if (native := reply.claude_memory) is not None and (native.files or native.answers):
        from memd.capture.text import plural

        lines.append(
            f"Claude Code's memory: {plural(native.files, 'file')} mirrored; left out as repeats of what it gave"
            f" the agent: {plural(native.lines, 'line')}, ~{native.tokens} tokens in"
            f" {plural(native.answers, 'hook answer')}"
        )
    lines.append("hook latency in the daemon, ms (since it started):" if reply.hook_latency_ms else "no hooks yet")
    for hook, lat in sorted(reply.hook_latency_ms.items()):
        lines.append(f"  {hook:<19}p50 {lat.p50}  p95 {lat.p95}  p99 {lat.p99}  (n={lat.count})")
    window = f"since {when(args.since)}" if args.since else "all time"
    lines.append(f"memory use ({window}): " + ", ".join(f"{n} {how}" for how, n in reply.usage.items()))
    if reply.most_cited:
        lines.append("most cited:")
    for c in reply.most_cited:
        lines.append(
            f"  [{label(c.cite)}] L{c.level} {c.uses:>4} uses ({c.injected} injected, {c.resolved} resolved,"
            f" {c.expanded} expanded; {c.sessions} sessions; last {when(c.last_used)})  {c.kind}: {c.title}"
        )
    emit(args, plain(reply), "\n".join(lines))
    return 0


STATUS = Command("status", "is the daemon up; version, paths, counts, spool backlog, latencies", status_arguments)
PING = Command("ping", "check that the daemon answers, and how fast", ping_arguments)
STATS = Command(
    "stats", "what memd holds (by kind, project, level; sizes; backlog) and how memories are used", stats_arguments
)
