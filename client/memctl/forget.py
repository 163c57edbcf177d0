"""``memctl forget``, ``scan`` and ``gc``: what is stored goes, or loses its secrets, for
good.  Each shows what it would do first (the daemon's dry run), asks before it does it
(``--yes`` skips the question; without a terminal it must be given), then lists what went."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from .common import CommandError, connect, emit, human_bytes, plain, when
from .parsing import Command, moment

if TYPE_CHECKING:
    from memd.protocol import EventRow, Forget, Forgotten, Scanned

__all__ = ["FORGET", "FORGET_TIMEOUT", "GC", "SCAN"]

FORGET_TIMEOUT = 600.0
"""Seconds memctl waits for a forget or gc: they rewrite the keyword indexes (~1 s at 100k
events here), may replay task lists (seconds), and a ``gc --vacuum`` rewrites the whole file."""
LISTED = 40
"""Events a forget or gc prints before saying how many more."""


def _event_lines(events: list[EventRow], total: int) -> list[str]:
    from memd.cite import label

    lines = [
        f"[{label(e.cite)}] {e.kind} {when(e.client_ts)} {(e.session_id or '-')[:8]}  {e.title}"
        for e in events[:LISTED]
    ]
    if total > len(lines):
        lines.append(f"… and {total - len(lines)} more (--json lists the first {len(events)})")
    return lines


def _by_kind(kinds: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in kinds.items())


def _confirmed(question: str) -> bool:
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def forget_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", metavar="ID", help="citation ids (mem:Ab3xY9Kq) or event numbers")
    p.add_argument("--session", help="every event of this session")
    p.add_argument("--before", type=moment, metavar="DATE", help="every event before this (2026-01-01, 90d)")
    p.add_argument("--query", metavar="Q", help="every event with every word of Q, or Q verbatim in its record")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--project", help="--before/--query: in this project (default: this directory's)")
    scope.add_argument("--all-projects", action="store_true", help="--before/--query: in every project")
    p.add_argument("--dry-run", action="store_true", help="only list what would be forgotten")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(handler=run_forget)


def _forget_request(args: argparse.Namespace, dry_run: bool) -> Forget:
    from memd.protocol import Forget

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


def run_forget(args: argparse.Namespace) -> int:
    from memd.protocol import Forgotten

    given = [args.ids, args.session is not None, args.before is not None, args.query is not None]
    if sum(map(bool, given)) != 1:
        raise CommandError("say what to forget, one way: ID..., --session S, --before DATE or --query Q", exit_code=2)
    if (args.project or args.all_projects) and (args.ids or args.session is not None):
        raise CommandError("--project and --all-projects go with --before and --query", exit_code=2)
    with connect(args, timeout=FORGET_TIMEOUT) as client:
        preview = client.call(_forget_request(args, dry_run=True), Forgotten)
        missing = f"no memory {', '.join(map(repr, preview.missing))}" if preview.missing else ""
        if not preview.total and not preview.spooled:
            if preview.selector == "ids":
                raise CommandError((missing or "nothing to forget") + ": use ids from memctl search or history")
            scope = f" in {preview.scope}" if preview.scope else ""
            raise CommandError(f"nothing to forget: no memory matches{scope}")
        lines = _event_lines(preview.events, preview.total)
        where = [] if preview.selector in ("ids", "session") else [f"in {preview.scope or 'all projects'}"]
        if args.dry_run:
            head = f"would forget {_forget_summary(preview)}:"
            emit(args, plain(preview), "\n".join([head, *where, *lines, missing]).rstrip())
            return 0
        if not args.yes:
            summary = _forget_summary(preview)
            if not sys.stdin.isatty():
                raise CommandError(f"this would forget {summary}; add --yes to confirm (or --dry-run to list them)")
            print("\n".join([f"about to forget {summary} for good:", *where, *lines]))
            if not _confirmed("forget them?"):
                raise CommandError("nothing was forgotten")
        reply = client.call(_forget_request(args, dry_run=False), Forgotten)
    done = f"{reply.vectors} vectors; {reply.refreshed} session summaries recomputed"
    human = [f"forgot {_forget_summary(reply)} ({done})", *_event_lines(reply.events, reply.total), missing]
    emit(args, plain(reply), "\n".join(human).rstrip())
    return 0


def scan_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "files", nargs="*", metavar="PATH",
        help="check these files (- for standard input) instead of what is stored: exit 1 when a secret is found",
    )  # fmt: skip
    p.add_argument("--dry-run", action="store_true", help="only list the events holding secrets (titles redacted)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(handler=run_scan)


def _scan_kinds(reply: Scanned) -> str:
    """``2 github-token, 1 password``."""
    return ", ".join(f"{n} {kind}" for kind, n in sorted(reply.kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def _scan_summary(reply: Scanned) -> str:
    """``3 of 1200 events hold secrets today's rules find (2 github-token, 1 password)``."""
    verb = "holds" if reply.total == 1 else "hold"
    return f"{reply.total} of {reply.checked} events {verb} secrets today's rules find ({_scan_kinds(reply)})"


def run_scan(args: argparse.Namespace) -> int:
    if args.files:
        from .scan_files import run_scan_files

        return run_scan_files(args)
    from memd.protocol import Scan, Scanned

    with connect(args, timeout=FORGET_TIMEOUT) as client:
        preview = client.call(Scan(apply=False), Scanned)
        if not preview.total:
            emit(args, plain(preview), f"checked {preview.checked} events: no secret that today's rules find")
            return 0
        lines = _event_lines(preview.events, preview.total)
        if args.dry_run:
            emit(args, plain(preview), "\n".join([_scan_summary(preview) + ":", *lines]))
            return 0
        if not args.yes:
            if not sys.stdin.isatty():
                print("\n".join([_scan_summary(preview) + ":", *lines]))
                raise CommandError("nothing was redacted: add --yes to redact them (or --dry-run to only list them)")
            print("\n".join([_scan_summary(preview) + ":", *lines]))
            if not _confirmed("redact them in place, for good?"):
                raise CommandError("nothing was redacted")
        reply = client.call(Scan(apply=True), Scanned)
    human = [
        f"redacted {reply.redacted} of {reply.checked} events ({_scan_kinds(reply)})",
        f"  {reply.vectors} vectors deleted, to be embedded again from the redacted text;"
        f" {reply.refreshed} session summaries recomputed; the old bytes are gone from the database file",
        *_event_lines(reply.events, reply.total),
    ]
    emit(args, plain(reply), "\n".join(human))
    return 0


def gc_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    p.add_argument(
        "--vacuum", action="store_true", help="then rewrite the file once so that it shrinks (auto_vacuum off)"
    )
    p.set_defaults(handler=run_gc)


def run_gc(args: argparse.Namespace) -> int:
    from memd.protocol import Collected, Gc

    with connect(args, timeout=FORGET_TIMEOUT) as client:
        reply = client.call(Gc(dry_run=args.dry_run, vacuum=args.vacuum), Collected)
    kinds = f" ({_by_kind(reply.kinds)})" if reply.kinds else ""
    verb = "would remove" if reply.dry_run else "removed"
    lines = [f"{verb} {reply.total} events{kinds}"]
    if reply.total:
        why = f"  {reply.aged} older than {reply.max_age_days:g} days"
        if reply.capped:
            cap = human_bytes(reply.max_db_bytes)
            why += f"; {reply.capped} younger ones, oldest first, to get under the {cap} cap"
        lines.append(why)
        if reply.derived:
            lines.append(f"  and {reply.derived} consolidated memories built from them")
        if not reply.dry_run:
            lines.append(f"  {reply.vectors} vectors; {reply.refreshed} session summaries recomputed")
    if reply.dry_run:
        size = f"database: {human_bytes(reply.bytes_before)} ({human_bytes(reply.used_bytes)} in use)"
    else:
        size = f"database: {human_bytes(reply.bytes_before)} → {human_bytes(reply.bytes_after)}"
        size += " (rewritten)" if reply.vacuumed else ""
    lines.append(f"{size}; cap {human_bytes(reply.max_db_bytes) if reply.max_db_bytes else 'none'}")
    if reply.auto_vacuum != "incremental":
        lines.append(
            "the file does not shrink by itself yet (auto_vacuum off): `memctl gc --vacuum` rewrites it once,"
            " which blocks writes for a few seconds per GB"
        )
    previous = when(reply.last_run) if reply.last_run else "never"
    lines.append(f"previous pass: {previous}")
    lines += _event_lines(reply.events, reply.total)
    emit(args, plain(reply), "\n".join(lines))
    return 0


FORGET = Command(
    "forget",
    "delete memories for good (by id, session, date or words), with what was built from them",
    forget_arguments,
)
SCAN = Command(
    "scan",
    "check what is stored against today's secret rules and redact what they find, for good; or check files"
    " (or standard input) before they reach Claude Code",
    scan_arguments,
)
GC = Command("gc", "apply the retention policy now: old low-importance events go ([retention])", gc_arguments)
