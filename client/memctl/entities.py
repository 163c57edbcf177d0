"""``memctl entities``: what memd knows of the files, people, symbols, errors and tickets its
events name, as the daemon lists them (``memd.store.entities``)."""

from __future__ import annotations

import argparse
import os

from .common import connect, emit, plain
from .parsing import Command, at_least

__all__ = ["ENTITIES"]


def entities_arguments(p: argparse.ArgumentParser) -> None:
    from memd.capture.entities import KINDS

    p.add_argument("name", nargs="?", help="an entity's name or alias (login.py, Caroline, KeyError, #412)")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--project", help="another project (its root path, or a part of it)")
    scope.add_argument("--all-projects", action="store_true", help="every project")
    p.add_argument("--kind", choices=KINDS, help="only entities of this kind")
    p.add_argument("--limit", type=at_least(1), default=20, help="how many entities or events (default 20)")
    p.set_defaults(handler=run_entities)


def run_entities(args: argparse.Namespace) -> int:
    from memd.context import entities_text
    from memd.protocol import Entities, EntitiesResult

    request = Entities(
        name=args.name, kind=args.kind, cwd=os.getcwd(), project=args.project, all_projects=args.all_projects,
        limit=args.limit,
    )  # fmt: skip
    with connect(args) as client:
        reply = client.call(request, EntitiesResult)
    hint = "" if args.name or reply.notice else "\n\nmore: memctl entities NAME · memctl search --entity NAME QUERY"
    emit(args, plain(reply), entities_text(reply) + hint)
    return 0


ENTITIES = Command(
    "entities", "the files, people, symbols, errors and tickets memory names, and where", entities_arguments
)
