"""``memctl project``: the projects memd knows, and a checkout linked to another project by hand.

A project is one repository wherever it is checked out (``memd.capture.project``): memd
finds the second checkout of a repository by its remote by itself.  A link covers what it
cannot see: a checkout without a remote, a fork, a repository whose remote moved.  It runs
as one transaction on the writer (``memd.store.projects``: a path whose project has
memories of its own merges the two); the retriever then forgets the project it remembered
per root.
"""

from __future__ import annotations

import os
import time

import structlog

from ..capture.project import project_root
from ..capture.remote import parse_key
from ..protocol import Error, LinkProject, ListProjects, ProjectLinked, ProjectList, Reply
from ..store import Store
from ..store.batch import atomically
from ..store.projects import link_key, link_path, path_project, project_info, project_list
from .search import Retriever

__all__ = ["Projects"]

log = structlog.get_logger("memd.projects")


class Projects:
    def __init__(self, store: Store, retriever: Retriever) -> None:
        self.store = store
        self.retriever = retriever

    async def list(self, request: ListProjects) -> ProjectList:
        return ProjectList(projects=await self.store.readers.run(project_list))

    async def link(self, request: LinkProject) -> Reply:
        if (request.other is None) == (request.key is None):
            return Error(code="invalid_request", message="link a path to one other path or one key")
        try:
            path = await self._checkout(request.path)
            if request.key is not None:
                key = parse_key(request.key)
                linked = await self.store.writer.call(atomically(link_key), path, key, time.time())
            else:
                other = await self._checkout(request.other or "")
                linked = await self.store.writer.call(atomically(link_path), path, other, time.time())
        except ValueError as exc:
            return Error(code="invalid_request", message=str(exc))
        self.retriever.forget_projects()
        project = await self.store.readers.run(project_info, linked.project_id)
        assert project is not None  # just linked, on the one writer
        log.info("project_linked", project_id=linked.project_id, merged=linked.merged, events=linked.events)
        return ProjectLinked(project=project, merged=linked.merged, events=linked.events)

    async def _checkout(self, path: str) -> str:
        """The project root of ``path``: a directory here, or a checkout memd knows (one
        deleted since may still be linked).  ``ValueError`` saying what is wrong otherwise."""
        if not os.path.isabs(path):
            raise ValueError(f"{path!r} is not an absolute path")
        root = project_root(path)
        if not os.path.isdir(root) and await self.store.readers.run(path_project, root) is None:
            raise ValueError(f"{root} is not a directory, nor a checkout memd knows")
        return root
