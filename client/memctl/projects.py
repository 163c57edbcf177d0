"""``memctl project``: the projects memd knows (``list``), and a checkout made part of another
project by hand (``link``).

memd makes every checkout of one repository one project by itself, by the repository's
remote; ``link`` is for what it cannot see: a checkout without a remote, a fork, a
repository whose remote moved.  OTHER is another checkout (a path), or a project's key as
``list`` shows it (``github.com/acme/api``, ``path:/home/me/notes``), or a remote URL.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from .common import CommandError, connect, emit, plain, when
from .parsing import Command

if TYPE_CHECKING:
    from memd.protocol import ProjectInfo

__all__ = ["PROJECT"]


def project_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["list", "link"])
    p.add_argument(
        "targets",
        nargs="*",
        metavar="PATH OTHER",
        help="link: a checkout, and another checkout or a key (github.com/acme/api, path:/home/me/notes)",
    )
    p.set_defaults(handler=run_project)


def run_project(args: argparse.Namespace) -> int:
    return run_list(args) if args.action == "list" else run_link(args)


def run_list(args: argparse.Namespace) -> int:
    from memd.protocol import ListProjects, ProjectList

    if args.targets:
        raise CommandError("memctl project list takes no paths", exit_code=2)
    with connect(args) as client:
        reply = client.call(ListProjects(), ProjectList)
    lines = [f"{len(reply.projects)} project{'s' if len(reply.projects) != 1 else ''}, the latest seen first:"]
    lines += [line for project in reply.projects for line in _describe(project)]
    emit(args, plain(reply), "\n".join(lines))
    return 0


def run_link(args: argparse.Namespace) -> int:
    from memd.capture.remote import parse_key
    from memd.protocol import LinkProject, ProjectLinked

    if len(args.targets) != 2:
        raise CommandError("usage: memctl project link PATH OTHER (another checkout, or a key)", exit_code=2)
    path, other = _absolute(args.targets[0]), args.targets[1]
    if _is_path(other):
        request = LinkProject(path=path, other=_absolute(other))
    else:
        try:  # here already, so that a token in a URL typed by mistake goes no further
            request = LinkProject(path=path, key=parse_key(other))
        except ValueError as exc:
            raise CommandError(f"OTHER is no directory here, and {exc}", exit_code=2) from None
    with connect(args) as client:
        reply = client.call(request, ProjectLinked)
    moved = f"{reply.events} event{'s' if reply.events != 1 else ''} moved"
    merged = f"; project {reply.merged} merged into it ({moved})" if reply.merged else ""
    human = f"{path} is a checkout of project {reply.project.id} ({reply.project.key}){merged}"
    emit(args, plain(reply), "\n".join([human, *_describe(reply.project)]))
    return 0


def _is_path(other: str) -> bool:
    """Whether OTHER names a checkout rather than a key: an existing directory, or written as
    a path (a checkout deleted since may still be linked)."""
    return os.path.isdir(other) or other.startswith(("/", ".", "~"))


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def _describe(project: ProjectInfo) -> list[str]:
    """A project as the listing shows it: id, key, events, when last seen, then its checkouts."""
    head = (
        f"  [{project.id}] {project.key or project.root}  {project.events} event{'s' if project.events != 1 else ''},"
        f" last seen {when(project.last_seen)}"
    )
    checkouts = [f"      {path}" for path in project.paths] or [f"      (no checkout here; seen at {project.root})"]
    return [head, *checkouts]


PROJECT = Command(
    "project",
    "projects: list them with their keys and checkouts; link a checkout to another project",
    project_arguments,
)
