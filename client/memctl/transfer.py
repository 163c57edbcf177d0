"""``memctl import`` and ``export``: memories in from Claude Code's transcripts and its own
memory files, or from an export file, and out as JSON lines (``memd_client.importer`` and
``memd_client.export`` do the reading and writing; the daemon reads the memory files)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING

from .common import CommandError, connect, emit, plain
from .parsing import Command, moment

if TYPE_CHECKING:
    from memd.protocol import ClaudeMemoryMirrored

__all__ = ["EXPORT", "IMPORT"]

IMPORT_TIMEOUT = 600.0
"""Seconds memctl waits for one import batch (the daemon captures and stores it whole)."""


def import_arguments(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group()
    what.add_argument("--project", help="this project's transcripts (its path; default: the current directory)")
    what.add_argument("--all", action="store_true", help="every project's transcripts")
    what.add_argument("--session", metavar="FILE", help="one transcript file (and its subagents')")
    what.add_argument("--from-export", metavar="FILE", help="a file written by memctl export")
    p.add_argument("--since", type=moment, help="only events after this (2026-11-01, 30d)")
    p.add_argument("--force", action="store_true", help="forget each session's events first, then import it again")
    p.set_defaults(handler=run_import)


def _transcript_files(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The transcripts ``memctl import`` was asked for, with their subagents'."""
    from .. import importer

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
        from memd.capture.claude_folder import memory_folder
        from memd.capture.project import project_root

        if os.path.isdir(memory_folder(os.path.dirname(base), project_root(project))):
            return []  # its memory files only
        raise CommandError(f"no Claude Code transcripts for {project} (looked in {folder}); --all imports all")
    return list(importer.transcripts(folder))


def _memory_roots(args: argparse.Namespace) -> list[str] | None:
    """The projects whose Claude Code memory files ``memctl import`` reads: [] for every
    project memd knows, None for none (one transcript, an export)."""
    if args.session or args.from_export:
        return None
    if args.all:
        return []
    from memd.capture.project import project_root

    return [project_root(os.path.abspath(args.project or os.getcwd()))]


def _mirrored_line(home: str, reply: ClaudeMemoryMirrored) -> str:
    if not reply.folders:
        return f"Claude Code memory: no memory folder found in {home}"
    from memd.capture.text import plural

    return (
        f"Claude Code memory: {plural(reply.files, 'file')} in {plural(reply.folders, 'folder')}:"
        f" {reply.stored} stored, {reply.forgotten} forgotten (changed or deleted)"
    )


def run_import(args: argparse.Namespace) -> int:
    from memd.protocol import ClaudeMemoryMirrored, Forget, Forgotten, MirrorClaudeMemory

    from .. import importer

    started = time.monotonic()
    if args.from_export:
        try:
            with connect(args, timeout=IMPORT_TIMEOUT) as client:
                totals = importer.restore_file(client, args.from_export)
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        kept = f"; {totals.result.cites_kept} kept their citation ids" if totals.result.stored else ""
        emit(args, plain(totals.result), f"restored from {args.from_export}: {totals.line()}{kept}")
        return 0
    files = _transcript_files(args)
    if args.since is not None:  # a file last written before --since holds nothing newer
        files = [f for f in files if os.path.getmtime(f[0]) >= args.since]
    with connect(args, timeout=IMPORT_TIMEOUT) as client:
        if args.force:  # each session's events go first, live-captured ones too: the transcript has them all
            sessions = [os.path.basename(path).removesuffix(".jsonl") for path, agent in files if not agent]
            forgotten = sum(client.call(Forget(session=s), Forgotten).total for s in sessions)
            print(f"memctl: --force: forgot {forgotten} events of {len(sessions)} sessions first", file=sys.stderr)
        totals = importer.import_files(client, files, args.since)
        roots = _memory_roots(args)
        home = os.path.dirname(importer.claude_projects(dict(os.environ)))
        request = MirrorClaudeMemory(home=home, roots=roots or [])
        mirrored = client.call(request, ClaudeMemoryMirrored) if roots is not None else None
    elapsed = time.monotonic() - started
    rate = f" in {elapsed:.1f} s ({totals.events / elapsed:.0f} events/s)" if elapsed > 0 else ""
    data = plain(totals.result) | {
        "files": totals.files,
        "sessions": len(totals.sessions),
        "events": totals.events,
        "records": totals.records,
        "corrupt_lines": totals.corrupt,
        "repaired_lines": totals.repaired,
        "seconds": round(elapsed, 3),
        "claude_memory": plain(mirrored) if mirrored is not None else None,
    }
    more = "; summaries and embeddings follow in the background (memctl status)" if totals.result.stored else ""
    note = totals.retention_note()
    memory = f"\n{_mirrored_line(home, mirrored)}" if mirrored is not None else ""
    emit(args, data, f"imported {totals.line()}{rate}{more}{memory}" + (f"\n{note}" if note else ""))
    return 0


def export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--project", help="only this project (its root path, or a part of it)")
    p.add_argument("--since", type=moment, help="only events after this (2026-11-01, 30d)")
    p.set_defaults(handler=run_export)


def run_export(args: argparse.Namespace) -> int:
    import sqlite3

    from .. import export

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


IMPORT = Command(
    "import",
    "Claude Code transcripts and memory files (this project's by default) or an export, into memd",
    import_arguments,
)
EXPORT = Command(
    "export", "memories as JSON lines on stdout (filtered content, citation ids, metadata)", export_arguments
)
