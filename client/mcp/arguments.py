"""The MCP tools' arguments: one Struct per tool, which msgspec turns into the tool's input
schema (the model reads the descriptions) and validates every call against."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from memd.capture.entities import KINDS as ENTITY_KINDS
from memd.protocol import AGENTS, KINDS

__all__ = [
    "CiteArgs",
    "DetailsArgs",
    "EntitiesArgs",
    "ForgetArgs",
    "RememberArgs",
    "SearchArgs",
    "SmartArgs",
    "StatsArgs",
    "TimelineArgs",
]

if TYPE_CHECKING:
    Kind = str  # for the checker: the kinds are known when memd runs, not before
else:
    Kind = Literal[tuple(KINDS)]  # for msgspec: the schema lists them and validation refuses others
if TYPE_CHECKING:
    EntityKind = str
    Agent = str
else:
    EntityKind = Literal[ENTITY_KINDS]
    Agent = Literal[AGENTS]
Query = Annotated[str, msgspec.Meta(min_length=1, max_length=2000, description="What to look for, in plain words.")]
Id = Annotated[
    str, msgspec.Meta(min_length=1, max_length=40, description="A citation id from search results, like mem:Ab3xY9Kq.")
]
Project = Annotated[
    str | None,
    msgspec.Meta(description="A project root or part of one (default: the current project; see all_projects)."),
]
Since = Annotated[
    str | None,
    msgspec.Meta(description="Only memories from then on: 2026-11-01, 2026-11-01T14:00, or an age: 30m, 12h, 7d, 2w."),
]
Budget = (
    Annotated[int, msgspec.Meta(ge=100, le=20000, description="Most tokens the answer may take (default 2000).")] | None
)


class SearchArgs(msgspec.Struct, forbid_unknown_fields=True):
    query: Query
    limit: Annotated[int, msgspec.Meta(ge=1, le=50, description="Most hits to list.")] = 10
    project: Project = None
    all_projects: Annotated[bool, msgspec.Meta(description="Search every project.")] = False
    kind: Annotated[Kind | None, msgspec.Meta(description="Only memories of this kind.")] = None
    agent: Annotated[Agent | None, msgspec.Meta(description="Only memories from this agent's sessions.")] = None
    since: Since = None
    entity: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                max_length=200,
                description="Only memories that name this entity: a file, person, function, error or ticket "
                "(as mem_entities lists them: login.py, Caroline, KeyError, #412).",
            ),
        ]
        | None
    ) = None
    team: (
        Annotated[
            str,
            msgspec.Meta(
                max_length=63,
                description="Search the team's shared memory on the sync server instead (memories of teammates "
                'this machine may not hold): a team\'s role, or "" for every team you are in. '
                "Words and meaning only: kind, since and entity do not apply.",
            ),
        ]
        | None
    ) = None


class EntitiesArgs(msgspec.Struct, forbid_unknown_fields=True):
    name: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                max_length=200,
                description="A file, person, function, class, test, command, error, ticket, URL or package, by name"
                " or alias (src/app/login.py, login.py, Caroline, KeyError, #412). Leave out to list the most"
                " mentioned.",
            ),
        ]
        | None
    ) = None
    kind: Annotated[EntityKind | None, msgspec.Meta(description="Only entities of this kind.")] = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=50, description="Most entities, or events per entity.")] = 10
    project: Project = None
    all_projects: Annotated[bool, msgspec.Meta(description="Look in every project.")] = False


class SmartArgs(msgspec.Struct, forbid_unknown_fields=True):
    query: Query
    budget: Budget = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=50, description="Most hits to consider.")] = 10
    project: Project = None
    all_projects: Annotated[bool, msgspec.Meta(description="Search every project.")] = False


class TimelineArgs(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    before: Annotated[int, msgspec.Meta(ge=0, le=20, description="Events before it to show.")] = 3
    after: Annotated[int, msgspec.Meta(ge=0, le=20, description="Events after it to show.")] = 3


class DetailsArgs(msgspec.Struct, forbid_unknown_fields=True):
    ids: Annotated[
        list[Id], msgspec.Meta(min_length=1, max_length=20, description="Citation ids, the ones you need only.")
    ]
    budget: Budget = None


class CiteArgs(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    quote: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1, max_length=5000, description="Text you mean to quote from it: checked, located exactly."
            ),
        ]
        | None
    ) = None


class RememberArgs(msgspec.Struct, forbid_unknown_fields=True):
    text: Annotated[
        str,
        msgspec.Meta(
            min_length=1, max_length=10000, description="What to keep, self-contained: it is read without this chat."
        ),
    ]


class ForgetArgs(msgspec.Struct, forbid_unknown_fields=True):
    ids: Annotated[list[Id], msgspec.Meta(max_length=100, description="Citation ids to delete.")] = []
    session: Annotated[str | None, msgspec.Meta(description="Or: every memory of this session id.")] = None
    before: Annotated[
        str | None,
        msgspec.Meta(description="Or: every memory of this project before then: 2026-01-01, or an age: 90d."),
    ] = None
    query: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                max_length=2000,
                description="Or: every memory of this project holding every word of this.",
            ),
        ]
        | None
    ) = None
    dry_run: Annotated[bool, msgspec.Meta(description="Only list what would be deleted.")] = False


class StatsArgs(msgspec.Struct, forbid_unknown_fields=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=50, description="How many of the most-cited memories to list.")] = 10
