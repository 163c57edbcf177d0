"""``memctl import`` and ``export``: memories in from Claude Code's transcripts or from an
export file, and out as JSON lines (``memd_client.importer`` and ``memd_client.export``
do the reading and writing)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from .common import CommandError, connect, emit, plain
from .parsing import Command, moment

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
        raise CommandError(f"no Claude Code transcripts for {project} (looked in {folder}); --all imports all")
    return list(importer.transcripts(folder))


def run_import(args: argparse.Namespace) -> int:
    from memd.protocol import Forget, Forgotten

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
    }
    more = "; summaries and embeddings follow in the background (memctl status)" if totals.result.stored else ""
    note = totals.retention_note()
    emit(args, data, f"imported {totals.line()}{rate}{more}" + (f"\n{note}" if note else ""))
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
    "import", "Claude Code transcripts (this project's by default) or an export, into memd", import_arguments
)
EXPORT = Command(
    "export", "memories as JSON lines on stdout (filtered content, citation ids, metadata)", export_arguments
)
