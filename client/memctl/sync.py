"""``memctl sync``: set up and watch sync through PostgreSQL (README: Sync).

``setup URL`` creates memd's schema on the server (``memd.store.remote.SCHEMA``: one
table, row-level security; run it once per database, as a role allowed to create a
schema) and writes the URL, without its password, to ``[sync] url`` in config.toml when
that file does not set one yet.  ``status`` asks the daemon where sync stands.
"""

from __future__ import annotations

import argparse
import os

from .common import CommandError, connect, emit, plain, when
from .parsing import Command

__all__ = ["SHARE", "SYNC"]


def sync_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["status", "setup"])
    p.add_argument("url", nargs="?", help="setup: postgresql://ROLE@HOST/DATABASE (default: [sync] url)")
    p.add_argument("--print-sql", action="store_true", help="setup: print the schema's SQL for an admin instead")
    p.set_defaults(handler=run_sync)


def run_sync(args: argparse.Namespace) -> int:
    return _setup(args) if args.action == "setup" else _status(args)


def _status(args: argparse.Namespace) -> int:
    from memd.protocol import Status, StatusReport

    with connect(args) as client:
        report = client.call(Status(), StatusReport).sync
    if report is None:
        emit(args, {"sync": None}, "sync is off: set [sync] url (memctl sync setup URL)")
        return 0
    lines = [
        f"sync with {report.server}: {report.state}",
        f"  machine:     {report.machine}",
        f"  to push:     {report.pending} events, {report.tombstones} forgets",
        f"  last push:   {when(report.last_push) if report.last_push else 'never'}",
        f"  last pull:   {when(report.last_pull) if report.last_pull else 'never'}"
        f" ({report.pulled} events applied since the daemon started"
        + (f", the last {report.lag_ms:.0f} ms after its push)" if report.lag_ms is not None else ")"),
    ]
    if report.last_error:
        lines.append(f"  last error:  {report.last_error} ({when(report.last_error_at or 0)})")
    if report.shared_id_seen is not None:
        seen = when(report.shared_id_seen)
        lines.append(f"  warning:     another machine syncs under this id ({seen}): memctl doctor")
    emit(args, {"sync": plain(report)}, "\n".join(lines))
    return 1 if report.state == "failing" else 0


def _setup(args: argparse.Namespace) -> int:
    from memd.config import ConfigError, load
    from memd.store.remote import SCHEMA, VECTORS, WORDS_INDEX

    if args.print_sql:  # and, for a server with pgvector, what adds team rows' vectors (a superuser's)
        print(SCHEMA.strip() + "\n\n-- as a superuser (see memd/store/remote.py):\n" + WORDS_INDEX)
        print("\n-- where the server has pgvector:" + VECTORS.rstrip())
        return 0
    try:
        config = load(args.paths.config_file).sync
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    configured = config.url
    url = args.url or os.environ.get("MEMD_SYNC_URL") or configured
    if not url:
        raise CommandError("no server: memctl sync setup postgresql://ROLE@HOST/DATABASE")
    import psycopg

    from memd.services.sync import server_name
    from memd.store.remote import install

    try:
        setup = install(url, sorted(set(config.teams.values())))
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, psycopg.OperationalError):  # the server was not reached, or refused the login
            raise CommandError(
                f"cannot reach {server_name(url)}: {first}. Check the URL, that the server runs and accepts"
                " this host, and the password (~/.pgpass or PGPASSWORD)"
            ) from None
        raise CommandError(
            f"cannot set up {server_name(url)}: {first}. An admin can run the SQL of `memctl sync setup --print-sql`"
        ) from None
    if not (setup.may_read and setup.may_write):
        raise CommandError(
            f"{server_name(url)} has memd's schema, but this role may not read and write memd.log:"
            " an admin can run the SQL of `memctl sync setup --print-sql` again (it grants them to every role)"
        )
    if setup.ran_schema:
        lines = [f"memd's schema is ready on {server_name(url)}"]
    else:
        lines = [f"joined memd's schema on {server_name(url)} (set up by its owner; this role may read and write)"]
    if setup.words != "indexed":
        lines.append(f"team search reads every team row until {setup.words}")
    if setup.vectors == "ready":
        lines.append("team search (memctl search --team) matches words and meaning: the server has pgvector")
    else:
        lines.append(f"team search (memctl search --team) matches words; for meaning too: {setup.vectors}")
    if setup.not_member_of:
        lines.append(
            f"not a member of {', '.join(setup.not_member_of)} ([sync.teams]): nothing is shared with"
            " or received from it until an admin runs GRANT <team> TO <your role>"
        )
    if not configured and args.url:
        _remember(args.paths.config_file, args.url)
        lines.append(f"[sync] url written to {args.paths.config_file} (without a password: use ~/.pgpass)")
    lines.append("restart the daemon to start syncing (memctl daemon restart)")
    facts = {"server": server_name(url), "ready": True, "words": setup.words, "vectors": setup.vectors}
    emit(args, facts, "\n".join(lines))
    return 0


def _remember(config_file: str, url: str) -> None:
    """Append ``[sync] url`` (its password dropped) to config.toml."""
    import json  # here: memctl loads every command's module to parse one
    import re
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if parts.password is not None:
        user = urllib.parse.quote(urllib.parse.unquote(parts.username or ""))
        host = parts.hostname or ""
        netloc = f"{user}@{host}" + (f":{parts.port}" if parts.port else "")
        url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    try:
        with open(config_file, encoding="utf-8") as f:
            if re.search(r"^\s*\[sync\]", f.read(), re.MULTILINE):
                raise CommandError(f"{config_file} has a [sync] table already: add url = {json.dumps(url)} to it")
    except FileNotFoundError:
        os.makedirs(os.path.dirname(config_file), exist_ok=True)
    with open(config_file, "a", encoding="utf-8") as f:
        f.write(f"\n[sync]\nurl = {json.dumps(url)}\n")  # a JSON string is a TOML basic string


def share_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="+", metavar="ID", help="citation ids (mem:Ab3xY9Kq) or event numbers")
    p.add_argument("--team", required=True, help="the team's PostgreSQL role (README: Sync)")
    p.set_defaults(handler=run_share)


def run_share(args: argparse.Namespace) -> int:
    from memd.protocol import Share, Shared

    with connect(args) as client:
        reply = client.call(Share(ids=args.ids, team=args.team), Shared)
    lines = [f"{reply.shared} memor{'y' if reply.shared == 1 else 'ies'} promoted to {args.team}"]
    if not reply.syncing:
        lines.append("sync is off here: they reach the team once it is set up (memctl sync setup)")
    if reply.missing:
        lines.append(f"no memory has these ids: {', '.join(reply.missing)}")
    emit(args, plain(reply), "\n".join(lines))
    return 1 if reply.missing else 0


SHARE = Command("share", "share memories with a team through the sync server", share_arguments)
SYNC = Command("sync", "sync with other machines and teammates through PostgreSQL: status, setup", sync_arguments)
