"""The viewer's charts, as numbers the templates draw in SVG: no script, no library.

Each function is pure: counts in, geometry out (``stacked`` days, ``bars``, the ``graph``
around an entity).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple

from memd.protocol import DayCount, EntityDetail, UsageDay

__all__ = ["DAYS", "Chart", "Graph", "bars", "graph", "per_project", "project_name", "usage"]

PALETTE: Final = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1")
DAYS: Final = 30
HEIGHT: Final = 120


class Column(NamedTuple):
    day: str
    total: int
    segments: list[tuple[str, int, int, int, str]]
    """(series, value, y, height, colour), bottom first."""


class Chart(NamedTuple):
    columns: list[Column]
    legend: list[tuple[str, str]]
    """(series, colour), in the order they stack."""
    top: int
    """The tallest column's total: the axis's top."""


def _days(today: float) -> list[str]:
    return [time.strftime("%Y-%m-%d", time.localtime(today - 86400 * n)) for n in range(DAYS - 1, -1, -1)]


def stacked(by_day: Mapping[str, Mapping[str, int]], colours: Mapping[str, str], today: float) -> Chart:
    """The last ``DAYS`` days as columns, each stacked from its series (in ``colours``' order)."""
    top = max((sum(v.values()) for v in by_day.values()), default=0) or 1
    columns = []
    for day in _days(today):
        y, segments = HEIGHT, []
        for name, colour in colours.items():
            value = by_day.get(day, {}).get(name, 0)
            if value:
                h = max(1, round(HEIGHT * value / top))
                y -= h
                segments.append((name, value, y, h, colour))
        columns.append(Column(day, sum(by_day.get(day, {}).values()), segments))
    return Chart(columns, list(colours.items()), top)


def per_project(counts: Sequence[DayCount], today: float) -> Chart:
    """Events per day, one colour per project: the five busiest, the rest as "other"."""
    totals: dict[str, int] = {}
    for c in counts:
        totals[project_name(c.project)] = totals.get(project_name(c.project), 0) + c.events
    named = sorted(totals, key=lambda n: -totals[n])[: len(PALETTE) - 1]
    colours = {name: PALETTE[i] for i, name in enumerate(named)}
    if len(totals) > len(named):
        colours["other"] = PALETTE[-1]
    by_day: dict[str, dict[str, int]] = {}
    for c in counts:
        series = project_name(c.project) if project_name(c.project) in named else "other"
        by_day.setdefault(c.day, {})[series] = by_day.setdefault(c.day, {}).get(series, 0) + c.events
    return stacked(by_day, colours, today)


def usage(days: Sequence[UsageDay], today: float) -> tuple[Chart, Chart]:
    """What memd's context did per day: memories injected, resolved and expanded; and the
    tokens it left out because Claude Code's own memory had said the same."""
    uses = {d.day: {"injected": d.injected, "resolved": d.resolved, "expanded": d.expanded} for d in days}
    saved = {d.day: {"tokens saved": d.tokens_saved} for d in days}
    colours = {"injected": PALETTE[0], "resolved": PALETTE[1], "expanded": PALETTE[2]}
    return stacked(uses, colours, today), stacked(saved, {"tokens saved": PALETTE[4]}, today)


def project_name(root: str | None) -> str:
    return os.path.basename(root or "") or "(no project)"


def bars(
    counts: Mapping[str, int | float] | Sequence[tuple[str, int]], width: int = 480
) -> list[tuple[str, float, int]]:
    """(label, value, bar length in px) for a bar chart, the biggest first."""
    items = sorted(counts.items() if isinstance(counts, Mapping) else counts, key=lambda kv: -kv[1])
    top = max((v for _, v in items), default=0) or 1
    return [(label, value, max(1, round(width * value / top)) if value else 0) for label, value in items]


class Node(NamedTuple):
    name: str
    kind: str
    x: float
    y: float
    r: float
    """The node's radius: more shared events, a bigger node."""
    together: int
    """Events naming both it and the centre (the centre's own: every event naming it)."""


class Edge(NamedTuple):
    x: float
    y: float
    width: float
    how: str


class Graph(NamedTuple):
    centre: Node
    nodes: list[Node]
    edges: list[Edge]
    """From the centre to each node, in the same order."""
    size: int


def graph(entity: EntityDetail, most: int = 12, size: int = 420) -> Graph:
    """The entity in the middle and what it goes with around it (the ``most`` strongest
    links; one node per name, its strongest link), each edge as thick as the link is strong."""
    strongest: dict[tuple[str, str], tuple[int, str]] = {}
    for link in entity.related:
        key = (link.name, link.kind)
        if link.count > strongest.get(key, (0, ""))[0]:
            strongest[key] = (link.count, link.how)
    chosen = sorted(strongest.items(), key=lambda kv: (-kv[1][0], kv[0]))[:most]
    top = max((count for _, (count, _) in chosen), default=1)
    mid, ring = size / 2, size / 2 - 70
    nodes, edges = [], []
    for i, ((name, kind), (count, how)) in enumerate(chosen):
        angle = 2 * math.pi * i / len(chosen) - math.pi / 2
        x, y = round(mid + ring * math.cos(angle), 1), round(mid + ring * math.sin(angle), 1)
        nodes.append(Node(name, kind, x, y, round(6 + 8 * count / top, 1), count))
        edges.append(Edge(x, y, round(1 + 4 * count / top, 1), how))
    return Graph(Node(entity.name, entity.kind, mid, mid, 18, entity.mentions), nodes, edges, size)
