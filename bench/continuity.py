"""Endless mode: SessionStart(compact/clear) latency at 10k/100k events, and the continuation
block on replayed sessions.

Tokens are memd's own estimate (``memd.tokens.estimate_tokens``).  Every daemon is a real
``python -m memd`` on fresh XDG directories (``harness.isolated_daemon``), embedding on.
Parts (``--parts``, default both):

``latency``  per N in ``--sizes``: a real daemon on a copy of the cached synthetic database
             (``search.ensure_database`` through ``context.corpus_daemon``: vectors too), once
             its embedding state is ``ready``.  The sessions are the 50 with the most events
             of the corpus's first project (``SELECT session_id, count(*) FROM events WHERE
             project_id = ? GROUP BY session_id ORDER BY 2 DESC``); run k takes session
             k mod 50.  Payloads are SessionStart as Claude Code sends it (cwd = the project
             root), each with a fresh ``prompt_id`` so that none is a duplicate.
             (a) over one ``Client`` connection, the round trip of an ``Ingest`` of a
             SessionStart with source ``compact`` in session k (the daemon commits it, then
             builds the continuation from the session's own events: ``state.fresh``),
             interleaved run by run with a ``Ping`` (the socket's floor); then the daemon's
             ``Status().latency_ms["ingest"]`` (compact only).  (b) the same with source
             ``clear`` in a fresh session id of the project (the standard block: at
             SessionStart the continuity score is its time term alone, so never seamless);
             then ``Status`` again (compact and clear mixed).  (c) wall time from spawn to
             exit of the real hook client (``python -I -S client/hook.py SessionStart``, the
             payload on stdin) for compact and for clear, interleaved run by run with
             ``python -I -S -c pass`` on the same interpreter (order rotated each round).
             For every compact reply: the estimated tokens of its ``additionalContext``,
             whether it is ``mode="continuation"``, and its sections; the median ms of
             the first and the last quarter of each series (every block injected is a
             use of its memories, and uses accumulate over the runs).  The daemon's log
             is read for the consolidator's runs meanwhile.  Then, in-process on the
             daemon's own copy of the database (daemon idle, embedding backlog drained),
             the pieces of both paths are timed over the same sessions, the reads on a
             plain read-only ``sqlite3`` connection: ``session_rows``, ``open_tasks``,
             ``take`` and their sum ``state.fresh``, the block's rendering
             (``continuation_lines`` + ``memory_block``); for clear ``state.latest``,
             ``memd.services.session_start.starting_material`` and its rendering; the compact path's
             writes on a second, writable connection: ``capture.prepare``, the
             SessionStart's commit (``write_batch``) and ``usage.record`` of the lines
             injected.  A cProfile of ``state.fresh`` and ``starting_material`` names
             their hot functions, and the plans of their main queries are shown.
             Target: daemon-side (socket round trip) compact p50 <= 15 ms at 100k.
``replay``   the three real transcripts of
             ``../shared/fixtures/claude-code/transcripts/-home-marco-projects-spotter``
             become hook events with ``context.hook_events`` (cwd moved to one directory
             under the daemon's temp root; timestamps shifted so that each transcript ends
             ``GAP_S`` seconds before the run: they are months old, and at that age the
             continuity score's time term is 0).  For each transcript, a fresh daemon gets
             the session's events over the socket in order (``Ingest``), except that at
             its midpoint (before event len // 2) and at its end (after the last event
             before SessionEnd) a SessionStart with source ``compact`` (fresh
             ``prompt_id``) of that same session goes through the real hook client; its
             block's tokens, bullet lines, chars (and chars as JSON, as the hook prints it)
             and sections (Goal, Open tasks, Files in play, Open errors, Decisions, Last
             reply) are recorded.  After the SessionEnd, a SessionStart ``clear`` in a new
             session id, then its first UserPromptSubmit = the transcript's first prompt
             that is not a slash command (memd never answers those), both through the
             hook client: whether the continuation was given and the continuity score (the
             block's ``reason="first prompt: continuity 0.xx (...)"``), and the score
             memd's own functions give in-process from the same stored snapshot (so it is
             known when the block is withheld), at the shifted age and at the transcript's
             real age.  When the transcript's first prompt is a slash command, a second new
             session replays the prompts as typed after ``clear`` (the command first).
             Checks: every block <= 2,000 tokens (``session_start_budget``) and <= 8,000
             chars (``MAX_CONTEXT_CHARS``).

After each daemon, its log is scanned for warnings, errors and tracebacks, and the spool
for frames the hook client could not hand over; both are reported.

    .venv/bin/python bench/continuity.py [--parts latency,replay] [--sizes 10000,100000]
                                         [--runs 100] [--warmup 5] [--seed 1] [--json]
"""

from __future__ import annotations

import cProfile
import inspect
import json
import os
import pstats
import re
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from context import (
    START_BUDGET,
    TRANSCRIPTS,
    _interleaved,
    _latency,
    _rtt,
    context_of,
    corpus_daemon,
    daemon_problems,
    emit,
    hook_events,
    log,
    median,
    moved,
    python_floor,
    run_hook,
)
from harness import Instance, isolated_daemon, markdown_table, parse_arguments, summary

from memd.capture.events import LOGGED
from memd.capture.extract import aspects, is_substantive
from memd.capture.prepare import Capture
from memd.capture.privacy import Privacy
from memd.capture.project import project_root
from memd.capture.snapshot import take
from memd.config import CaptureConfig, PrivacyConfig
from memd.context import CONTINUATION_SECTIONS, MAX_CONTEXT_CHARS, continuation_lines, expand_hint, memory_block
from memd.continuity.carry_on import snapshot_aspects
from memd.continuity.score import continuity
from memd.protocol import Ingest, Ingested, Ping, Pong
from memd.retrieve.prompt_gate import not_a_question
from memd.services.recall import memctl_command
from memd.services.session_start import starting_material
from memd.store import state, usage
from memd.store.batch import write_batch
from memd.store.state import session_rows
from memd.store.tasks import open_tasks
from memd.tokens import estimate_tokens

SESSIONS = 50
GAP_S = 120.0
TARGET_DAEMON_P50 = {100_000: 15.0}
SECTIONS = ("Goal", "Open tasks", "Files in play", "Open errors", "Decisions", "Last reply")
_BLOCK = re.compile(r"<memory-context([^>]*)>\n(.*?)</memory-context>", re.S)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_SCORE = re.compile(r"continuity (\d+\.\d+) \(([^)]*)\)")


# --- blocks -----------------------------------------------------------------------------------


def blocks(context: str) -> list[tuple[dict[str, str], str]]:
    """The ``<memory-context>`` blocks of a hook's context: (attributes, the whole block)."""
    return [(dict(_ATTR.findall(m.group(1))), m.group(0)) for m in _BLOCK.finditer(context)]


def describe(block: str) -> dict[str, Any]:
    """Size and shape of one block: tokens, bullet lines, chars (raw and as JSON), items per section."""
    found: dict[str, int] = {}
    current = None
    for line in block.splitlines():
        if line.endswith(":") and line[:-1] in CONTINUATION_SECTIONS:
            current = line[:-1]
            found[current] = 0
        elif current and line.startswith("- "):
            found[current] += 1
        elif current and line and not line.startswith("- ") and current != "Compaction summary":
            current = None
    attrs = blocks(block)[0][0] if blocks(block) else {}
    return {
        "mode": attrs.get("mode", ""),
        "reason": attrs.get("reason", ""),
        "tokens": estimate_tokens(block),
        "lines": sum(count for name, count in found.items() if name != "Compaction summary"),
        "chars": len(block),
        "json_chars": len(json.dumps(block, ensure_ascii=False)) - 2,
        "sections": found,
    }


def within(d: dict[str, Any]) -> bool:
    return d["tokens"] <= START_BUDGET and d["chars"] <= MAX_CONTEXT_CHARS and d["json_chars"] <= MAX_CONTEXT_CHARS


def start_payload(session: str, cwd: str, source: str) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "SessionStart",
        "source": source,
        "prompt_id": str(uuid.uuid4()),
    }


# --- latency ----------------------------------------------------------------------------------


def log_events(instance: Instance, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The daemon's log records of the events ``names`` (e.g. the consolidator's runs)."""
    out = []
    with open(os.path.join(instance.root, "daemon.out"), encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("event") in names:
                out.append(record)
    return out


def top_sessions(database: str, root: str) -> tuple[int, list[tuple[str, int]]]:
    """The project's id and its SESSIONS sessions with the most events (id, events)."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        (project_id,) = conn.execute("SELECT id FROM projects WHERE root = ?", (root,)).fetchone()
        rows = conn.execute(
            "SELECT session_id, count(*) FROM events WHERE project_id = ? AND session_id IS NOT NULL"
            " GROUP BY session_id ORDER BY 2 DESC, 1 LIMIT ?",
            (project_id, SESSIONS),
        ).fetchall()
    finally:
        conn.close()
    return project_id, rows


def settle(instance: Instance, timeout: float = 300.0) -> int | None:
    """Wait (up to ``timeout``) for the embedding backlog to drain; the backlog left."""
    deadline = time.monotonic() + timeout
    while True:
        embedding = instance.status().embedding
        backlog = embedding.backlog if embedding else None
        if not backlog or time.monotonic() > deadline:
            return backlog
        time.sleep(0.2)


def _open_tasks(conn: sqlite3.Connection, project_id: int, now: float) -> list[Any]:
    """``tasks.open_tasks`` as ``state.fresh`` calls it (later versions take ``now``)."""
    if "now" in inspect.signature(open_tasks).parameters:
        return open_tasks(conn, project_id, now)
    return open_tasks(conn, project_id)  # type: ignore[call-arg]


TAKE_OPTIONS: dict[str, Any] = {"scored": False} if "scored" in inspect.signature(take).parameters else {}
"""``take`` as ``state.fresh`` calls it (later versions leave the aspects out for a block to show)."""


def _timed(samples: list[float], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    samples.append((time.perf_counter() - started) * 1000)
    return value


PLANS = {
    "session_rows": "SELECT e.id, coalesce(c.cite, ''), e.kind, e.tool, e.title, substr(e.text, 1, 4000), e.meta,"
    " e.client_ts FROM events e LEFT JOIN citations c ON c.event_id = e.id"
    f" WHERE e.session_id = ? AND e.{LOGGED} ORDER BY e.id DESC LIMIT 2000",
    "state.latest": "SELECT e.id, coalesce(c.cite, ''), e.meta FROM events e LEFT JOIN citations c"
    " ON c.event_id = e.id WHERE e.project_id = ? AND e.kind = 'snapshot' AND e.session_id IS NOT ?"
    " ORDER BY e.client_ts DESC LIMIT 1",
}
"""The queries of the compact and clear paths whose plans are reported (as in memd, for EXPLAIN)."""


def hotspots(sessions: list[str], call: Callable[[str], Any], top: int = 8) -> list[dict[str, Any]]:
    """cProfile of ``call`` once per session: the functions with the most own time, per call in ms."""
    profiler = cProfile.Profile()
    for session in sessions:
        profiler.enable()
        call(session)
        profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    ranked = sorted(stats.items(), key=lambda item: -item[1][2])[:top]
    return [
        {
            "function": f"{path.rsplit('/', 1)[-1]}:{line}({name})",
            "calls": calls // len(sessions),
            "own_ms": own * 1000 / len(sessions),
            "cumulative_ms": cumulative * 1000 / len(sessions),
        }
        for (path, line, name), (_, calls, own, cumulative, _) in ranked
    ]


def profile(database: str, root: str, project_id: int, sessions: list[str], reps: int) -> dict[str, Any]:
    """Time the pieces of the compact and clear paths in-process: the reads on a plain read-only
    connection; the compact path's writes (the SessionStart's commit, the usage of the lines
    injected) on a second, writable one, as the daemon's writer does them."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    writer = sqlite3.connect(database, isolation_level=None)
    for pragma in ("PRAGMA busy_timeout = 5000", "PRAGMA synchronous = NORMAL"):
        writer.execute(pragma)
    capture = Capture(CaptureConfig(), Privacy(PrivacyConfig()))
    hint = expand_hint(memctl_command())
    name = root.rstrip("/").rsplit("/", 1)[-1]
    pieces = ("capture.prepare", "project_root", "write_batch (commit)", "session_rows", "open_tasks", "take")
    pieces += ("state.fresh (all three)", "render continuation", "usage.record (lines injected)")
    pieces += ("state.latest", "starting_material", "render standard")
    ms: dict[str, list[float]] = {piece: [] for piece in pieces}
    rows_read: list[int] = []
    try:
        for k in range(reps + 1):
            session = sessions[k % len(sessions)]
            now = time.time()
            t = ms if k else {piece: [] for piece in pieces}  # the first round only warms the cache
            body = json.dumps(start_payload(session, root, "compact")).encode()
            request = Ingest(event="SessionStart", sent_at_ns=time.time_ns(), payload=body)
            event = _timed(t["capture.prepare"], capture.prepare, request, time.time())
            where = _timed(t["project_root"], project_root, event.cwd)
            _timed(t["write_batch (commit)"], write_batch, writer, [(event, where)], [])
            rows = _timed(t["session_rows"], session_rows, conn, session)
            tasks = _timed(t["open_tasks"], _open_tasks, conn, project_id, now)
            _timed(t["take"], take, rows, tasks, session, now, **TAKE_OPTIONS)
            snapshot = _timed(t["state.fresh (all three)"], state.fresh, conn, session, project_id, now)
            attrs = {"project": name, "root": root, "mode": "continuation", "reason": "compaction"}
            _, kept = _timed(
                t["render continuation"], memory_block, attrs, "Where the work stands.", CONTINUATION_SECTIONS,
                continuation_lines(snapshot), root=root, hint=hint, budget=START_BUDGET,
            )  # fmt: skip
            ids = [line.event_id for line in kept]
            _timed(t["usage.record (lines injected)"], usage.record, writer, ids, session, "injected", time.time())
            other = f"profile-{uuid.uuid4().hex}"
            _timed(t["state.latest"], state.latest, conn, project_id, other)
            lines = _timed(t["starting_material"], starting_material, conn, project_id, other, now)
            attrs = {"project": name, "root": root, "mode": "standard", "reason": "clear"}
            _timed(
                t["render standard"], memory_block, attrs, "What memd remembers.",
                ("Recent sessions", "Open tasks", "Important", "Recent errors"), lines, root=root, hint=hint,
                budget=START_BUDGET,
            )  # fmt: skip
            if k:
                rows_read.append(len(rows))
        hot = {
            "state.fresh": hotspots(sessions, lambda s: state.fresh(conn, s, project_id, time.time())),
            "starting_material": hotspots(
                sessions, lambda _: starting_material(conn, project_id, f"profile-{uuid.uuid4().hex}", time.time())
            ),
        }
        foreign = [sum(t.session_id != s for t in _open_tasks(conn, project_id, time.time())) for s in sessions]
        args = {"session_rows": (sessions[0],), "state.latest": (project_id, "x")}
        plans = {key: conn.execute("EXPLAIN QUERY PLAN " + sql, args[key]).fetchall() for key, sql in PLANS.items()}
    finally:
        conn.close()
        writer.close()
    return {
        "ms": {key: summary(values) for key, values in ms.items()},
        "rows_read": {"median": median(rows_read), "max": max(rows_read, default=0)},
        "open_tasks_of_other_sessions": {"median": median(foreign), "max": max(foreign, default=0)},
        "hotspots": hot,
        "plans": {key: [row[-1] for row in plan] for key, plan in plans.items()},
    }


def latency(n: int, runs: int, warmup: int, seed: int) -> dict[str, Any]:
    token = uuid.uuid4().hex[:8]
    with corpus_daemon(n, seed) as (instance, root, ready_s):
        project_id, top = top_sessions(instance.paths.database, root)
        sessions = [s for s, _ in top]
        log(
            f"latency at {n:,}: ready in {ready_s:.1f} s, project {root}, {len(top)} sessions of"
            f" {top[-1][1]}-{top[0][1]} events; {runs} runs"
        )
        result: dict[str, Any] = {
            "n": n,
            "ready_s": ready_s,
            "root": root,
            "sessions": len(top),
            "session_events": {"min": top[-1][1], "median": median([c for _, c in top]), "max": top[0][1]},
        }
        embedding = instance.status().embedding
        result["backlog_at_ready"] = embedding.backlog if embedding else None

        def ingest(payload: dict[str, Any]) -> Ingest:
            return Ingest(event="SessionStart", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())

        def compact(k: int) -> dict[str, Any]:
            return start_payload(sessions[k % len(sessions)], root, "compact")

        def clear(k: int, via: str) -> dict[str, Any]:
            return start_payload(f"bench-{token}-{via}-clear-{k:04d}", root, "clear")

        with instance.client() as client:

            def ping(_: int) -> tuple[float, str]:
                return _rtt(client, Ping(), Pong)[0], ""

            def socket(payload: dict[str, Any]) -> tuple[float, str]:
                ms, reply = _rtt(client, ingest(payload), Ingested)
                if reply.duplicate:
                    raise RuntimeError(f"a duplicate SessionStart: {payload}")
                return ms, context_of(reply.stdout)

            a1 = _interleaved(runs, warmup, [("ping", ping), ("compact", lambda k: socket(compact(k)))])
            result["daemon_compact_only"] = _latency(instance.status().latency_ms.get("ingest"))
            a2 = _interleaved(runs, warmup, [("ping", ping), ("clear", lambda k: socket(clear(k, "socket")))])
            result["daemon_compact_and_clear"] = _latency(instance.status().latency_ms.get("ingest"))
        floor = python_floor(instance)
        b = _interleaved(
            runs,
            warmup,
            [
                ("python -I -S -c pass", floor),
                ("compact", lambda k: run_hook(instance, "SessionStart", compact(k))),
                ("clear", lambda k: run_hook(instance, "SessionStart", clear(k, "hook"))),
            ],
        )
        status = instance.status()
        result["daemon_all"] = _latency(status.latency_ms.get("ingest"))
        result["events"] = status.events
        result["spooled"] = len(instance.spooled())
        result["backlog_before_profile"] = settle(instance)
        log(f"latency at {n:,}: in-process profile")
        result["profile"] = profile(instance.paths.database, root, project_id, sessions, runs)
        result["problems"] = daemon_problems(instance)
        result["consolidations"] = [
            {k: r.get(k) for k in ("event", "memories", "ms", "timestamp")}
            for r in log_events(instance, ("consolidated", "consolidation_failed", "consolidation_skipped"))
        ]
    series = {
        "socket round trip": {
            "ping (in the compact runs)": a1["ping"],
            "SessionStart compact": a1["compact"],
            "ping (in the clear runs)": a2["ping"],
            "SessionStart clear": a2["clear"],
        },
        "hook process": {
            "python -I -S -c pass": b["python -I -S -c pass"],
            "SessionStart compact": b["compact"],
            "SessionStart clear": b["clear"],
        },
    }
    result["ms"] = {
        group: {name: summary([ms for ms, _ in values]) for name, values in named.items()}
        for group, named in series.items()
    }
    quarter = max(1, runs // 4)
    result["drift"] = {
        f"{group} {name}": (median([ms for ms, _ in values[:quarter]]), median([ms for ms, _ in values[-quarter:]]))
        for group, named in (("socket", {"compact": a1["compact"], "clear": a2["clear"]}), ("hook", b))
        for name, values in named.items()
    }
    result["blocks"] = {
        f"{group} {name}": [describe(context) for _, context in values]
        for group, named in (("socket", {"compact": a1["compact"], "clear": a2["clear"]}), ("hook", b))
        for name, values in named.items()
        if name != "python -I -S -c pass"
    }
    return result


# --- replay -----------------------------------------------------------------------------------


def first_prompt(hooks: list[Any]) -> str | None:
    """The first prompt memd would answer: not a slash command, and saying what the user wants."""
    for hook in hooks:
        if hook.event == "UserPromptSubmit":
            text = hook.payload["prompt"].strip()
            if not not_a_question(text) and is_substantive(text):
                return text
    return None


def scored(database: str, of: str, session: str, prompt: str, offset_s: float) -> dict[str, Any]:
    """The continuity score of ``prompt`` opening ``session``, by memd's own functions on the
    snapshot the daemon would use (the latest of ``of``'s project): at the (shifted) age, and at
    the transcript's real age."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT project_id FROM sessions WHERE id = ?", (of,)).fetchone()
        stored = state.latest(conn, row[0], session) if row and row[0] is not None else None
    finally:
        conn.close()
    if stored is None:
        return {"snapshot": None}
    found = aspects([prompt])
    new = {"topics": found.topics, "files": found.files, "entities": found.entities}
    hours = (time.time() - stored.snapshot.last_ts) / 3600
    now, real = (
        continuity(new, snapshot_aspects(stored.snapshot), hours),
        continuity(new, snapshot_aspects(stored.snapshot), hours + offset_s / 3600),
    )
    return {
        "snapshot": stored.cite,
        "age_h": hours,
        "score": now.score,
        "mode": now.mode,
        "parts": now.parts,
        "real_age_h": hours + offset_s / 3600,
        "real_score": real.score,
        "real_mode": real.mode,
        "prompt aspects": new,
        "snapshot aspects": snapshot_aspects(stored.snapshot),
    }


def opening(instance: Instance, cwd: str, prompts: list[str], session: str | None = None) -> dict[str, Any]:
    """A new session: SessionStart clear, then ``prompts`` in turn, through the real hook client;
    and how memd's ``state.session_info`` sees the session after them (source, prompts)."""
    session = session or str(uuid.uuid4())
    _, start = run_hook(instance, "SessionStart", start_payload(session, cwd, "clear"))
    out: dict[str, Any] = {"session": session, "clear": describe(start) if start else None, "prompts": []}
    for prompt in prompts:
        payload = {
            "session_id": session,
            "transcript_path": "/dev/null",
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
            "prompt_id": str(uuid.uuid4()),
        }
        _, context = run_hook(instance, "UserPromptSubmit", payload)
        found = [describe(block) for attrs, block in blocks(context) if attrs.get("mode") == "continuation"]
        match = _SCORE.search(found[0]["reason"]) if found else None
        out["prompts"].append(
            {
                "prompt": prompt,
                "continuation": found[0] if found else None,
                "score": float(match.group(1)) if match else None,
                "parts": match.group(2) if match else "",
                "tokens": estimate_tokens(context),
                "blocks": [attrs.get("for") or attrs.get("mode", "") for attrs, _ in blocks(context)],
                "session_info": info(instance, session),
            }
        )
    return out


def info(instance: Instance, session: str) -> dict[str, Any]:
    """How memd sees a session (``state.session_info``: source, prompts) and the kinds it stored."""
    conn = sqlite3.connect(f"file:{instance.paths.database}?mode=ro", uri=True)
    try:
        kinds = conn.execute("SELECT kind, count(*) FROM events WHERE session_id = ? GROUP BY kind", (session,))
        return {**state.session_info(conn, session)._asdict(), "kinds": dict(kinds.fetchall())}
    finally:
        conn.close()


def replay() -> dict[str, Any]:
    sessions = sorted((hook_events(p) for p in TRANSCRIPTS.glob("*.jsonl")), key=lambda s: s.hooks[0].sent_at_ns)
    transcripts, problems, spooled = [], [], 0
    for replayed in sessions:
        log(f"replay: session {replayed.id[:8]} ({len(replayed.hooks)} hook events)")
        hooks = replayed.hooks
        end = len(hooks) - 1 if hooks[-1].event == "SessionEnd" else len(hooks)
        points = {len(hooks) // 2: "midpoint", end: "end"}
        offset_ns = time.time_ns() - int(GAP_S * 1e9) - hooks[-1].sent_at_ns
        row: dict[str, Any] = {"session": replayed.id[:8], "events": len(hooks), "compacts": []}
        with isolated_daemon() as instance:
            cwd = os.path.join(instance.root, "spotter")
            os.makedirs(cwd)
            with instance.client() as client:
                for i, hook in enumerate([*hooks, None]):
                    if i in points:
                        payload = moved(start_payload(replayed.id, replayed.cwd, "compact"), replayed.cwd, cwd)
                        ms, context = run_hook(instance, "SessionStart", payload)
                        row["compacts"].append({"at": points[i], "sent": i, "ms": ms, **describe(context)})
                    if hook is not None:
                        body = json.dumps(moved(hook.payload, replayed.cwd, cwd)).encode()
                        client.call(
                            Ingest(event=hook.event, sent_at_ns=hook.sent_at_ns + offset_ns, payload=body), Ingested
                        )
            prompt = first_prompt(hooks)
            row["first prompt"] = prompt
            if prompt is not None:
                fresh = str(uuid.uuid4())
                row["in-process"] = scored(instance.paths.database, replayed.id, fresh, prompt, offset_ns / 1e9)
                row["opening"] = opening(instance, cwd, [prompt], fresh)
            typed = [h.payload["prompt"] for h in hooks if h.event == "UserPromptSubmit"]
            if typed and typed[0] != prompt:
                row["as typed"] = opening(instance, cwd, typed[:2])
            spooled += len(instance.spooled())
            problems += daemon_problems(instance)
        transcripts.append(row)
    return {"transcripts": transcripts, "gap_s": GAP_S, "spooled": spooled, "problems": problems}


# --- report -----------------------------------------------------------------------------------


def _stats(values: list[int] | list[float]) -> str:
    if not values:
        return "-"
    s = summary(values)
    return f"{median(values):.0f} / {s['p95']:.0f} / {max(values):.0f}"


def report_latency(results: list[dict[str, Any]], runs: int, warmup: int) -> str:
    rows: list[list[object]] = []
    for r in results:
        size = f"{r['n']:,}"
        for group, named in r["ms"].items():
            base = named.get("python -I -S -c pass")
            for name, s in named.items():
                if group == "socket round trip":
                    base = named["ping (in the compact runs)" if "compact" in name else "ping (in the clear runs)"]
                ratio = ""
                if base is not None and not name.startswith(("python", "ping")):
                    ratio = f"{s['p50'] / base['p50']:.2f} / {s['p95'] / base['p95']:.2f}"
                rows.append([size, group, name, s["p50"], s["p95"], s["p99"], ratio])
        for label, key in (
            ("compact only", "daemon_compact_only"),
            ("compact + clear", "daemon_compact_and_clear"),
            ("all (socket + hook)", "daemon_all"),
        ):
            if (lat := r[key]) is not None:
                rows.append([size, f"daemon Status (n={lat['count']})", label, lat["p50"], lat["p95"], lat["p99"], ""])
    block_rows = []
    for r in results:
        for name, described in r["blocks"].items():
            modes = {d["mode"] or "(none)" for d in described}
            tokens = [d["tokens"] for d in described]
            block_rows.append(
                [
                    f"{r['n']:,}",
                    name,
                    len(described),
                    ", ".join(f"{m} {sum((d['mode'] or '(none)') == m for d in described)}" for m in sorted(modes)),
                    median(tokens),
                    summary(tokens)["p95"] if tokens else 0,
                    max(tokens, default=0),
                    median([d["chars"] for d in described]),
                    sum(not within(d) for d in described),
                ]
            )
    section_rows = []
    for r in results:
        compacts = r["blocks"]["socket compact"] + r["blocks"]["hook compact"]
        section_rows.append(
            [f"{r['n']:,}", len(compacts)]
            + [median([d["sections"].get(s, 0) for d in compacts]) for s in SECTIONS]
            + [sum(bool(d["sections"].get(s)) for d in compacts) for s in SECTIONS[:1]]
        )
    profile_rows = []
    for r in results:
        for name, s in r["profile"]["ms"].items():
            profile_rows.append([f"{r['n']:,}", name, s["p50"], s["p95"], s["p99"]])
    hot_rows = [
        [f"{r['n']:,}", path, h["function"], h["calls"], h["own_ms"], h["cumulative_ms"]]
        for r in results
        for path, found in r["profile"]["hotspots"].items()
        for h in found
    ]
    verdicts = []
    for r in results:
        p50 = r["ms"]["socket round trip"]["SessionStart compact"]["p50"]
        if (target := TARGET_DAEMON_P50.get(r["n"])) is not None:
            verdicts.append(
                f"N={r['n']:,}: SessionStart compact over the socket p50 {p50:.2f} ms (target <= {target}):"
                f" {'met' if p50 <= target else 'NOT met'}"
            )
        pr = r["profile"]
        verdicts.append(
            f"N={r['n']:,}: ready {r['ready_s']:.1f} s after start; {r['sessions']} sessions of"
            f" {r['session_events']['min']}-{r['session_events']['max']} events (median"
            f" {r['session_events']['median']:.0f}); rows read per compact median {pr['rows_read']['median']:.0f};"
            f" open tasks listed from other sessions median {pr['open_tasks_of_other_sessions']['median']:.0f}"
            " (open_tasks lists at most 20);"
            f" embedding backlog {r['backlog_at_ready']} at ready, {r['backlog_before_profile']} before the profile;"
            f" events at the end {r['events']}; spooled {r['spooled']}; daemon log warnings/errors {len(r['problems'])}"
        )
        verdicts.append(
            f"N={r['n']:,}: median ms of the first / last quarter of the runs: "
            + "; ".join(f"{name} {first:.1f} / {last:.1f}" for name, (first, last) in r["drift"].items())
        )
        made = [c for c in r["consolidations"] if c["event"] == "consolidated"]
        verdicts.append(
            f"N={r['n']:,}: background consolidations during the run (daemon log): {len(made)},"
            f" ms {[c['ms'] for c in made]}, memories made {sum(c['memories'] or 0 for c in made)}"
        )
        verdicts.append(
            f"N={r['n']:,}: query plans: " + "; ".join(f"{k}: {' / '.join(v)}" for k, v in pr["plans"].items())
        )
    return "\n".join(
        [
            f"latency, ms: {runs} interleaved runs of each (+{warmup} warm-up); ratio = p50 / p95 over the floor"
            " (socket: the Ping of the same runs; hook: python -I -S -c pass)",
            "",
            markdown_table(["events", "measured", "what", "p50", "p95", "p99", "ratio"], rows),
            "",
            "blocks returned (estimated tokens; over = over 2,000 tokens or 8,000 chars)",
            "",
            markdown_table(
                ["events", "series", "runs", "mode", "median tokens", "p95", "max", "median chars", "over"], block_rows
            ),
            "",
            "compact blocks (socket + hook): median items per section",
            "",
            markdown_table(["events", "blocks", *SECTIONS, "with a Goal"], section_rows),
            "",
            f"in-process, ms (plain sqlite3 on the daemon's copy, daemon idle; {runs} runs over the same sessions):"
            " the compact path top to bottom, then the clear path's own pieces",
            "",
            markdown_table(["events", "piece", "p50", "p95", "p99"], profile_rows),
            "",
            "cProfile, once per session: the functions with the most own time, ms per call of the path"
            " (profiling inflates Python-heavy code)",
            "",
            markdown_table(["events", "path", "function", "calls", "own ms", "cumulative ms"], hot_rows),
            "",
            *verdicts,
        ]
    )


def report_replay(r: dict[str, Any]) -> str:
    compact_rows, opening_rows = [], []
    samples: list[dict[str, Any]] = []
    for t in r["transcripts"]:
        for c in t["compacts"]:
            samples.append(c)
            compact_rows.append(
                [t["session"], c["at"], c["sent"], c["mode"] or "(none)", c["tokens"], c["lines"], c["chars"]]
                + [c["sections"].get(s, 0) for s in SECTIONS]
                + [f"{c['ms']:.1f}"]
            )
        for label, key in (("first prompt", "opening"), ("as typed", "as typed")):
            if key not in t:
                continue
            o = t[key]
            clear = o["clear"] or {}
            for n, p in enumerate(o["prompts"], 1):
                cont = p["continuation"]
                if cont:
                    samples.append({**cont, "at": "first prompt"})
                inproc = t.get("in-process", {}) if key == "opening" else {}
                opening_rows.append(
                    [
                        t["session"],
                        f"{label} #{n}",
                        (p["prompt"][:60] + ("…" if len(p["prompt"]) > 60 else "")).replace("|", "\\|"),
                        f"{clear.get('mode', '-')}: {clear.get('reason', '')}".replace("|", "\\|"),
                        "yes" if cont else "no",
                        "" if p["score"] is None else f"{p['score']:.2f} ({p['parts']})",
                        f"{inproc['score']:.2f} {inproc['mode']} / {inproc['real_score']:.2f} {inproc['real_mode']}"
                        f" ({inproc['real_age_h']:.0f} h)"
                        if inproc.get("snapshot")
                        else "",
                        cont["tokens"] if cont else 0,
                        ", ".join(p["blocks"]),
                        f"{p['session_info']['source']}, {p['session_info']['prompts']}",
                    ]
                )
    tokens = [s["tokens"] for s in samples]
    lines = [s["lines"] for s in samples]
    chars = [s["chars"] for s in samples]
    over = [s for s in samples if not within(s)]
    aspects_lines = []
    for t in r["transcripts"]:
        if (inproc := t.get("in-process", {})).get("snapshot"):
            aspects_lines.append(
                f"{t['session']}: prompt {json.dumps(inproc['prompt aspects'])}; snapshot"
                f" {json.dumps(inproc['snapshot aspects'])}"
            )
    return "\n".join(
        [
            f"replay: SessionStart compact through the real hook client (timestamps shifted to end {r['gap_s']:.0f} s"
            " before the run); sent = hook events sent before it",
            "",
            markdown_table(
                ["session", "at", "sent", "mode", "tokens", "lines", "chars", *SECTIONS, "hook ms"], compact_rows
            ),
            "",
            "after the session: SessionStart clear in a new session, then its first prompt(s)",
            "",
            markdown_table(
                [
                    "session",
                    "prompt",
                    "text",
                    "clear block",
                    "continuation",
                    "score (block)",
                    "in-process: shifted / real age",
                    "tokens",
                    "blocks",
                    "session_info: source, prompts",
                ],
                opening_rows,
            ),
            "",
            "continuation blocks (compact + first prompt), median / p95 / max: "
            f"tokens {_stats(tokens)}, bullet lines {_stats(lines)}, chars {_stats(chars)}; {len(samples)} blocks,"
            f" {len(over)} over 2,000 tokens or 8,000 chars",
            "",
            "aspects (in-process): " + ("\n  ".join(["", *aspects_lines]) if aspects_lines else "-"),
            "",
            f"spooled frames: {r['spooled']}; daemon log warnings/errors: {len(r['problems'])}",
        ]
    )


def main() -> int:
    args, parts, sizes = parse_arguments(__doc__ or "", "latency,replay")
    out: dict[str, Any] = {}
    if "latency" in parts:
        out["latency"] = [latency(n, args.runs, args.warmup, args.seed) for n in sizes]
    if "replay" in parts:
        out["replay"] = replay()
    emit(
        out,
        args.json,
        {"latency": lambda results: report_latency(results, args.runs, args.warmup), "replay": report_replay},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
