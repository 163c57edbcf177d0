"""The viewer's pure parts: how it words and marks text, its charts' geometry, its URL filters."""

from __future__ import annotations

import os
import time

from memd.protocol import DayCount, EntityDetail, EntityLink, UsageDay
from memd.retrieve.rank import snippet, unmarked
from memd_client.ui import charts, look
from memd_client.ui.view import Filters


def test_matches_are_highlighted_and_the_text_s_own_brackets_stay() -> None:
    text = "the [config] loader keeps <b>config</b> twice"
    marked = snippet(text, ["config"])
    assert unmarked(marked, ["config"]) == [
        ("the [", False), ("config", True), ("] loader keeps <b>", False), ("config", True), ("</b> twice", False),
    ]  # fmt: skip
    html = str(look.highlighted(marked, ["config"]))
    assert html == "the [<mark>config</mark>] loader keeps &lt;b&gt;<mark>config</mark>&lt;/b&gt; twice"
    assert str(look.highlighted("no [terms] here", [])) == "no [terms] here"


def test_paths_read_relative_to_their_project_and_home() -> None:
    home = os.path.expanduser("~")
    assert look.relative("Edit /work/api/src/app.py and /work/api/README", "/work/api") == "Edit src/app.py and README"
    assert look.relative(f"Read {home}/notes/todo.md", None) == "Read ~/notes/todo.md"
    assert look.relative("Read /work/apiary/x.py", "/work/api") == "Read /work/apiary/x.py"  # not a prefix of a name
    assert look.relative("cd /", "/") == "cd /"


def test_a_kind_is_a_chip_of_its_family_and_anything_else_is_escaped() -> None:
    assert str(look.chip("tool_error")) == '<span class="chip k-error" title="tool_error">error</span>'
    assert str(look.chip("session_start")) == '<span class="chip k-session" title="session_start">session start</span>'
    odd = str(look.chip('x"><script>'))
    assert "<script>" not in odd and 'class="chip k-other"' in odd


def test_a_date_range_covers_whole_local_days() -> None:
    start, end = Filters(since="2026-03-01", until="2026-03-01").span
    assert start == time.mktime((2026, 3, 1, 0, 0, 0, 0, 0, -1))
    assert end is not None and start is not None and 23 * 3600 <= end - start <= 25 * 3600  # a DST day too
    assert Filters(since="yesterday").span == (None, None)


def test_filters_make_the_url_of_their_next_page() -> None:
    f = Filters.of({"project": "/w/api", "kind": "tool_error", "t": "secret", "q": ""})
    assert f.url("/p/", before=812) == "/p/?project=%2Fw%2Fapi&kind=tool_error&before=812"  # never the token
    assert Filters().url("/p/") == "/p/" and not Filters().active and f.active


def test_the_day_chart_stacks_projects_and_keeps_the_quiet_ones_as_other() -> None:
    now = time.mktime((2026, 3, 10, 12, 0, 0, 0, 0, -1))
    counts = [DayCount(day="2026-03-10", project=f"/w/p{i}", events=10 - i) for i in range(7)]
    counts.append(DayCount(day="2026-03-09", project=None, events=20))
    chart = charts.per_project(counts, now)
    assert len(chart.columns) == charts.DAYS and chart.columns[-1].day == "2026-03-10"
    assert [name for name, _ in chart.legend] == ["(no project)", "p0", "p1", "p2", "p3", "other"]
    today = chart.columns[-1]
    assert today.total == sum(10 - i for i in range(7)) == chart.top
    assert [s[0] for s in today.segments][-1] == "other" and sum(s[1] for s in today.segments) == today.total
    assert abs(sum(s[3] for s in today.segments) - charts.HEIGHT) <= 2  # the tallest column fills the height
    tall = round(charts.HEIGHT * 20 / 49)
    assert chart.columns[-2].segments == [("(no project)", 20, charts.HEIGHT - tall, tall, charts.PALETTE[0])]


def test_usage_per_day_and_tokens_saved_are_two_charts() -> None:
    now = time.mktime((2026, 3, 10, 12, 0, 0, 0, 0, -1))
    uses, saved = charts.usage([UsageDay(day="2026-03-10", injected=4, resolved=1, tokens_saved=120)], now)
    assert [s[:2] for s in uses.columns[-1].segments] == [("injected", 4), ("resolved", 1)]
    assert saved.columns[-1].total == 120 and not saved.columns[0].segments


def test_an_entity_s_graph_puts_it_in_the_middle_and_its_strongest_links_around() -> None:
    related = [EntityLink(name=f"f{i}.py", kind="file", how="with", count=i + 1) for i in range(15)]
    related.append(EntityLink(name="f14.py", kind="file", how="fix", count=2))  # weaker link, same node
    entity = EntityDetail(name="KeyError", kind="error", aliases=[], mentions=30, sessions=3, first_seen=0,
                          last_seen=0, related=related, events=[])  # fmt: skip
    g = charts.graph(entity, most=12, size=400)
    assert (g.centre.x, g.centre.y) == (200, 200) and len(g.nodes) == 12 == len(g.edges)
    assert g.nodes[0].name == "f14.py" and g.edges[0].how == "with" and g.nodes[0].r > g.nodes[-1].r
    assert all(abs(((n.x - 200) ** 2 + (n.y - 200) ** 2) ** 0.5 - 130) < 1 for n in g.nodes)  # on one ring
    assert len({(n.x, n.y) for n in g.nodes}) == 12
    lonely = charts.graph(EntityDetail(name="x", kind="name", aliases=[], mentions=1, sessions=1, first_seen=0,
                                       last_seen=0, related=[], events=[]))  # fmt: skip
    assert lonely.nodes == [] and lonely.edges == []


def test_the_derived_family_is_what_memd_makes() -> None:
    from memd.capture.events import DERIVED_KINDS

    assert {kind for kind, family in look.FAMILY.items() if family == "derived"} == set(DERIVED_KINDS)
