"""``memctl doctor``, ``rebuild`` and ``spool``: when something is wrong.  What is broken
and the command that fixes it; indexes rebuilt from the event log; frames the daemon
could not replay, put back or deleted."""

from __future__ import annotations

import argparse
import os
import sys

from .common import CommandError, connect, emit, plain
from .parsing import Command

__all__ = ["DOCTOR", "REBUILD", "SPOOL"]

REBUILD_TIMEOUT = 3600.0
"""Seconds memctl waits for a rebuild of the keyword indexes (minutes at millions of events)."""


def doctor_arguments(p: argparse.ArgumentParser) -> None:
    p.set_defaults(handler=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    """Check the installation (memd_client/doctor/); exit 1 when something is broken."""
    from .. import doctor  # imports the embedding engine when checking the model

    findings = doctor.examine(
        args.paths, home=os.path.expanduser("~"), cwd=os.getcwd(), python=os.path.abspath(sys.executable)
    )
    emit(args, doctor.report(findings), doctor.render(findings))
    return 1 if doctor.failed(findings) else 0


def rebuild_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fts", action="store_true", help="the keyword indexes (every FTS table) and the entities")
    p.add_argument("--vectors", action="store_true", help="every vector: re-embed all events in the background")
    p.set_defaults(handler=run_rebuild)


def run_rebuild(args: argparse.Namespace) -> int:
    from memd.protocol import Rebuild, Rebuilt

    everything = not args.fts and not args.vectors
    request = Rebuild(fts=args.fts or everything, vectors=args.vectors or everything)
    with connect(args, timeout=REBUILD_TIMEOUT) as client:
        reply = client.call(request, Rebuilt)
    lines = []
    if request.fts:
        lines.append(f"keyword indexes and entities rebuilt from {reply.fts_rows} events")
    if request.vectors:
        lines.append(f"{reply.vectors_queued} events queued for embedding (progress: memctl status)")
    emit(args, plain(reply), "\n".join(lines))
    return 0


def spool_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=["status", "retry", "delete"], default="status")
    p.add_argument("--yes", action="store_true", help="delete: do not ask for confirmation")
    p.set_defaults(handler=run_spool)


def run_spool(args: argparse.Namespace) -> int:
    """The spool: what waits for the daemon, and the frames set aside after failed replays
    (their events are kept there until put back or deleted)."""
    from memd_wire import spooled

    from ..doctor.findings import plural  # the doctor's wording

    where = args.paths.spool_dir
    if args.action == "retry":
        moved = spooled.retry_failed(where)
        human = f"put {plural(len(moved), 'frame')} back into {where}: memd replays them at its next drain"
        emit(args, {"retried": len(moved), "spool_dir": where}, human if moved else "no frame is set aside")
        return 0
    if args.action == "delete":
        aside = spooled.failed(where)
        if not aside:
            emit(args, {"deleted": 0, "spool_dir": where}, "no frame is set aside")
            return 0
        if not args.yes:
            folder = os.path.join(where, spooled.FAILED_DIR)
            what = f"{plural(len(aside), 'frame')} set aside in {folder} (their events are lost)"
            if not sys.stdin.isatty():
                raise CommandError(f"this would delete {what}; add --yes to confirm")
            if input(f"delete {what}? [y/N] ").strip().lower() not in ("y", "yes"):
                raise CommandError("nothing was deleted")
        deleted = spooled.delete_failed(where)
        emit(args, {"deleted": deleted, "spool_dir": where}, f"deleted {plural(deleted, 'frame')} set aside")
        return 0
    waiting, aside = spooled.pending(where), spooled.failed(where)
    data = {"spool_dir": where, "pending": len(waiting), "failed": [os.path.basename(p) for p in aside]}
    lines = [f"{where}: {plural(len(waiting), 'frame')} waiting for the daemon, {len(aside)} set aside"]
    lines += [
        f"  {spooled.FAILED_DIR}/{os.path.basename(p)} ("
        + (
            f"{plural(spooled.attempts(p), 'failed replay')})"
            if spooled.attempts(p)
            else "never an event: not retried)"
        )
        for p in aside
    ]
    if aside:
        lines.append("  memctl spool retry puts them back (after an upgrade that fixes the cause); memctl spool delete")
    emit(args, data, "\n".join(lines))
    return 0


DOCTOR = Command("doctor", "check this installation, daemon up or down; each problem with its fix", doctor_arguments)
REBUILD = Command("rebuild", "recreate the keyword indexes and/or the vectors from the event log", rebuild_arguments)
SPOOL = Command("spool", "events waiting for the daemon; frames set aside after failed replays", spool_arguments)
