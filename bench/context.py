"""Progressive retrieval and context injection: index vs details tokens, tokens injected per prompt, hook latency.

Tokens are memd's own estimate (``memd.tokens.estimate_tokens``, calibrated against
Claude's tokenizer, slightly high on purpose).  Every daemon is a real ``python -m memd``
on fresh XDG directories (``harness.isolated_daemon``) with the embedding model on.
Parts (``--parts``, default all):

``efficiency``  what the index layer saves over expanding every hit.  Golden sets
                (``../shared/fixtures/golden/*.json``, one project per file, loaded and
                embedded as ``bench/retrieval.py`` does): for every ``match`` query,
                ``Search(limit=5)`` in its project, index tokens = the sum of
                ``estimate_tokens(index_line(hit))``; then ``Details`` of the same hits
                (budget 100,000, nothing cut), details tokens = the sum of
                ``estimate_tokens(detail_text(detail))``; saving = 1 - index / details.
                Golden memories are one-liners, so the same is done on a copy of the
                synthetic 10k corpus (``bench/corpus.py``, events of 200 B-4 KB) with
                30 of ``search.py``'s queries, scoped to its first project.
``replay``      tokens injected per prompt over real sessions.  The three transcripts of
                ``../shared/fixtures/claude-code/transcripts/-home-marco-projects-spotter``
                become the hook events Claude Code sends (``hook_events``: SessionStart,
                UserPromptSubmit per typed prompt, PostToolUse / PostToolUseFailure per
                tool call with its result, Stop per turn that was not interrupted,
                SessionEnd), with the records' timestamps and their cwd moved to one
                directory under the daemon's temp root (one project).  For each session
                in turn, a fresh daemon gets the other two over the socket (``Ingest``),
                embeds them all, then the replayed session's SessionStart (source
                ``startup``) and its prompts, in order, go through the real hook client
                (``python -I -S client/hook.py EVENT``); the tokens of the
                ``additionalContext`` it prints are counted (0 when it prints nothing).
                Budgets checked: 800 tokens per prompt, 2,000 per SessionStart.
``latency``     per N in ``--sizes``: a real daemon on a copy of the cached synthetic
                database (``search.ensure_database``; vectors too), once its embedding
                state is ``ready``; prompts are ``search.py``'s queries in turn, in the
                corpus's first project, a fresh session id (and prompt_id) every run so
                nothing is withheld as already injected.  (a) over one ``Client``
                connection, round trip of an ``Ingest`` of a UserPromptSubmit, and then of
                a SessionStart, each interleaved run by run with a ``Ping`` (the socket's
                floor); (b) wall time from spawn to exit of the real hook client for
                UserPromptSubmit and SessionStart, interleaved run by run with ``python
                -I -S -c pass`` on the same interpreter (order rotated each run), and for
                UserPromptSubmit also with questions never asked before (the coding-memory
                set's, ``bench/eval/``: no query vector cached), as a session's first prompt
                and as a later prompt of one long session (the common case); (c) the
                daemon's own ``Status().latency_ms["ingest"]`` after (a)'s prompts alone
                (UserPromptSubmit only) and after everything (all ingests mixed).  The
                prompts' own embedding runs in the daemon meanwhile, as it would in use.

After each daemon, its log is scanned for warnings, errors and tracebacks, and the spool
for frames the hook client could not hand over; both are reported.

    .venv/bin/python bench/context.py [--parts efficiency,replay,latency] [--sizes 10000,100000]
                                      [--runs 100] [--warmup 5] [--seed 1] [--json]
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from corpus import Corpus
from eval_set import SET as EVAL_SET
from harness import REPO, Instance, isolated_daemon, markdown_table, parse_arguments, summary
from retrieval import GOLDEN, drain, load
from search import SCOPED, copy_corpus, ensure_database, queries  # search imports memd.services.embed before usearch

from memd.config import ContextConfig
from memd.context import detail_text, index_line
from memd.protocol import Details, DetailsResult, Ingest, Ingested, Latency, Ping, Pong, Search, SearchResults
from memd.tokens import estimate_tokens
from memd_client.rpc import Client
from memd_wire.launcher import HOOK_SCRIPT

TRANSCRIPTS = REPO.parent / "shared" / "fixtures" / "claude-code" / "transcripts" / "-home-marco-projects-spotter"
PYTHON = os.path.abspath(sys.executable)
LIMIT = 5
DETAILS_BUDGET = 100_000
SYNTHETIC_QUERIES = 30
PROMPT_BUDGET = ContextConfig().prompt_budget
START_BUDGET = ContextConfig().session_start_budget
TARGET_SAVING = 0.80
TARGET_DAEMON_P50 = {100_000: 20.0}
TARGET_HOOK_P50 = {100_000: 30.0}
TARGET_HOOK_RATIO = {100_000: 1.8}
"""Issue 19: a new question's whole prompt hook within 1.8 times ``python -I -S -c pass``, p50."""
NEW_QUESTIONS = ("UserPromptSubmit, a new question, first prompt", "UserPromptSubmit, a new question, later prompt")
READY_TIMEOUT = 900.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def median(values: list[float] | list[int]) -> float:
    return float(statistics.median(values)) if values else 0.0


def daemon_problems(instance: Instance) -> list[str]:
    """Log lines of the daemon at warning level or above, and traceback lines."""
    out = []
    with open(os.path.join(instance.root, "daemon.out"), encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                level = json.loads(line).get("level", "")
            except (ValueError, AttributeError):
                level = ""
            if level in ("warning", "error", "critical", "exception") or "Traceback" in line:
                out.append(line.strip()[:400])
    return out


def wait_ready(instance: Instance) -> float:
    """Seconds until the embedding state is ``ready`` (model loaded, index open)."""
    started = time.perf_counter()
    while (status := instance.status()).embedding is None or status.embedding.state != "ready":
        if instance.proc.poll() is not None or time.perf_counter() - started > READY_TIMEOUT:
            raise RuntimeError(f"the daemon did not become ready ({status.embedding}):\n{instance.log_tail()}")
        time.sleep(0.1)
    return time.perf_counter() - started


@contextmanager
def corpus_daemon(n: int, seed: int) -> Iterator[tuple[Instance, str, float]]:
    """A real daemon on a copy of the cached synthetic database of ``n`` events (built if missing),
    once ready; with the root of the project searched and the seconds it took to be ready."""
    path, built = ensure_database(n, seed)
    if built is not None:
        log(f"  built the {n:,}-event database in {built:.0f} s")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    roots = [root for (root,) in conn.execute("SELECT root FROM projects ORDER BY id")]
    conn.close()
    root = SCOPED if SCOPED in roots else roots[0]

    with isolated_daemon(seed=copy_corpus(path)) as instance:
        yield instance, root, wait_ready(instance)


def python_floor(instance: Instance) -> Callable[[int], tuple[float, str]]:
    """One run of ``python -I -S -c pass``: the floor a hook process is measured against."""
    argv = [PYTHON, "-I", "-S", "-c", "pass"]

    def floor(_: int) -> tuple[float, str]:
        started = time.perf_counter()
        subprocess.run(argv, input=b"{}\n", capture_output=True, env=instance.env, check=False)
        return (time.perf_counter() - started) * 1000, ""

    return floor


def context_of(stdout: str | bytes) -> str:
    """The ``additionalContext`` of a hook's stdout, ``""`` when it has none."""
    if not stdout:
        return ""
    output = json.loads(stdout).get("hookSpecificOutput") or {}
    return output.get("additionalContext", "")


def run_hook(instance: Instance, event: str, payload: dict[str, Any]) -> tuple[float, str]:
    """The real hook client as Claude Code runs it: ms from spawn to exit, and the context printed."""
    stdin = json.dumps(payload).encode() + b"\n"
    started = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-I", "-S", HOOK_SCRIPT, event], input=stdin, capture_output=True, env=instance.env, check=False
    )
    ms = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"hook {event} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return ms, context_of(done.stdout)


# --- efficiency -------------------------------------------------------------------------------


def expand(client: Client, search: Search) -> dict[str, Any]:
    """One query: tokens of its index lines, and of the same hits' details."""
    hits = client.call(search, SearchResults).results
    row: dict[str, Any] = {"hits": len(hits), "index": [estimate_tokens(index_line(hit)) for hit in hits]}
    row["advertised"] = sum(hit.tokens for hit in hits)
    row["details"], row["incomplete"] = [], 0
    if hits:
        reply = client.call(Details(ids=[f"mem:{hit.cite}" for hit in hits], budget=DETAILS_BUDGET), DetailsResult)
        row["details"] = [estimate_tokens(detail_text(detail)) for detail in reply.details]
        row["incomplete"] = len(reply.missing) + len(reply.omitted) + sum(d.truncated for d in reply.details)
    return row


def tally(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    index = sum(sum(r["index"]) for r in rows)
    details = sum(sum(r["details"]) for r in rows)
    lines = [t for r in rows for t in r["index"]]
    return {
        "set": name,
        "queries": len(rows),
        "with hits": sum(1 for r in rows if r["hits"]),
        "hits": sum(r["hits"] for r in rows),
        "index tokens": index,
        "details tokens": details,
        "saving": 1 - index / details if details else 0.0,
        "index line median": median(lines),
        "detail median": median([t for r in rows for t in r["details"]]),
        "advertised / details": sum(r["advertised"] for r in rows) / details if details else 0.0,
        "incomplete": sum(r["incomplete"] for r in rows),
    }


def efficiency(seed: int) -> dict[str, Any]:
    files = sorted(GOLDEN.glob("*.json"))
    sets, problems = [], []
    log("efficiency: golden sets")
    with isolated_daemon() as instance, instance.client() as client:
        for path in files:
            load(client, path, instance.root)
        drain(instance, timeout=600)
        every: list[dict[str, Any]] = []
        for path in files:
            cwd = os.path.join(instance.root, path.stem)
            matches = [q for q in json.loads(path.read_text())["queries"] if q["expectation"] == "match"]
            rows = [expand(client, Search(query=q["query"], limit=LIMIT, cwd=cwd)) for q in matches]
            sets.append(tally(path.stem, rows))
            every += rows
        sets.append(tally("all golden sets", every))
        problems += daemon_problems(instance)
    log("efficiency: synthetic corpus, 10k")
    qs = [q for _, q in queries(Corpus(seed))]
    picked = [qs[i * len(qs) // SYNTHETIC_QUERIES] for i in range(SYNTHETIC_QUERIES)]
    with corpus_daemon(10_000, seed) as (instance, root, _), instance.client() as client:
        rows = [expand(client, Search(query=q, limit=LIMIT, project=root)) for q in picked]
        sets.append(tally(f"synthetic 10k ({SYNTHETIC_QUERIES} queries)", rows))
        problems += daemon_problems(instance)
    return {"sets": sets, "problems": problems}


# --- replay -----------------------------------------------------------------------------------


class Hook(NamedTuple):
    event: str
    sent_at_ns: int
    payload: dict[str, Any]


class Session(NamedTuple):
    id: str
    cwd: str
    hooks: list[Hook]


def _ns(timestamp: str) -> int:
    return round(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1e6) * 1000


def _typed_prompt(text: str) -> str | None:
    """What the user typed, from a user record's text; None for what Claude Code wrote itself."""
    if text.startswith("[Request interrupted") or text.startswith(("<local-command-stdout>", "<local-command-caveat>")):
        return None
    if "<command-name>" in text:  # a slash command, echoed: the prompt was "/name args"
        name = text.split("<command-name>", 1)[1].split("</command-name>", 1)[0].strip()
        args = (
            text.split("<command-args>", 1)[1].split("</command-args>", 1)[0].strip()
            if "<command-args>" in text
            else ""
        )
        return f"{name} {args}".strip()
    return text


def hook_events(path: Path) -> Session:
    """The hook events Claude Code sent for one transcript, in order.

    A user record of text (a string, or text blocks; not ``isMeta``, not Claude Code's own
    interruption marks or local-command output) is a UserPromptSubmit; each tool_result is
    the PostToolUse (PostToolUseFailure when ``is_error``) of its tool_use, with the
    record's ``toolUseResult`` as ``tool_response``; a turn that ends without the user
    interrupting it ends with Stop and its last assistant text (Claude Code sends no Stop
    on an interrupt).  SessionStart at the first record, SessionEnd at the last.
    """
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    session = next(r["sessionId"] for r in records if r.get("sessionId"))
    cwd = next(r["cwd"] for r in records if r.get("cwd"))
    stamped = [r for r in records if r.get("timestamp")]
    base = {"session_id": session, "transcript_path": "/dev/null", "cwd": cwd, "permission_mode": "default"}
    hooks = [Hook("SessionStart", _ns(stamped[0]["timestamp"]), {**base, "source": "startup"})]
    uses: dict[str, tuple[str, Any]] = {}
    turn: dict[str, Any] = {"open": False, "interrupted": False, "text": "", "at": 0}

    def end_turn() -> None:
        if turn["open"] and not turn["interrupted"] and turn["text"]:
            hooks.append(
                Hook("Stop", turn["at"], {**base, "stop_hook_active": False, "last_assistant_message": turn["text"]})
            )
        turn.update(open=False, interrupted=False, text="", at=0)

    for r in stamped:
        at, message = _ns(r["timestamp"]), r.get("message") or {}
        content = message.get("content")
        if r.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_use":
                    uses[block["id"]] = (block["name"], block.get("input") or {})
                elif block.get("type") == "text" and block["text"].strip():
                    turn.update(text=block["text"], at=at)
        if r.get("type") != "user" or r.get("isMeta"):
            continue
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if block.get("type") != "tool_result":
                continue
            name, tool_input = uses.get(block["tool_use_id"], ("?", {}))
            response = r.get("toolUseResult", block.get("content"))
            call = {**base, "tool_name": name, "tool_input": tool_input, "tool_use_id": block["tool_use_id"]}
            if block.get("is_error"):
                error = response if isinstance(response, str) else json.dumps(block.get("content"))
                hooks.append(Hook("PostToolUseFailure", at, {**call, "error": error, "is_interrupt": False}))
            else:
                hooks.append(Hook("PostToolUse", at, {**call, "tool_response": response}))
        texts = [b["text"] for b in blocks if b.get("type") == "text"]
        if any(t.startswith("[Request interrupted") for t in texts):
            turn["interrupted"] = True
        prompt = _typed_prompt("\n".join(texts)) if texts else None
        if prompt:
            end_turn()
            turn["open"] = True
            hooks.append(Hook("UserPromptSubmit", at, {**base, "prompt": prompt, "prompt_id": r.get("uuid", "")}))
    end_turn()
    hooks.append(Hook("SessionEnd", _ns(stamped[-1]["timestamp"]), {**base, "reason": "prompt_input_exit"}))
    for hook in hooks:
        hook.payload["hook_event_name"] = hook.event
    return Session(session, cwd, hooks)


def moved(payload: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``payload`` with every occurrence of the project directory ``old`` replaced by ``new``."""
    return json.loads(json.dumps(payload).replace(old, new))


def replay() -> dict[str, Any]:
    sessions = sorted((hook_events(p) for p in TRANSCRIPTS.glob("*.jsonl")), key=lambda s: s.hooks[0].sent_at_ns)
    prompts, starts, problems, spooled = [], [], [], 0
    for replayed in sessions:
        history = [s for s in sessions if s is not replayed]
        log(f"replay: session {replayed.id[:8]} after {', '.join(s.id[:8] for s in history)}")
        with isolated_daemon() as instance:
            cwd = os.path.join(instance.root, "spotter")
            os.makedirs(cwd)
            with instance.client() as client:
                for session in history:
                    for hook in session.hooks:
                        body = json.dumps(moved(hook.payload, session.cwd, cwd)).encode()
                        client.call(Ingest(event=hook.event, sent_at_ns=hook.sent_at_ns, payload=body), Ingested)
            drain(instance, timeout=600)
            stored = instance.status().events
            start = moved(replayed.hooks[0].payload, replayed.cwd, cwd)
            _, context = run_hook(instance, "SessionStart", start)
            starts.append(
                {
                    "session": replayed.id[:8],
                    "history events": stored,
                    "tokens": estimate_tokens(context),
                    "lines": context.count("\n- [mem:"),
                    "chars": len(context),
                }
            )
            for n, hook in enumerate(h for h in replayed.hooks if h.event == "UserPromptSubmit"):
                _, context = run_hook(instance, "UserPromptSubmit", moved(hook.payload, replayed.cwd, cwd))
                prompts.append(
                    {
                        "session": replayed.id[:8],
                        "n": n + 1,
                        "prompt": hook.payload["prompt"],
                        "tokens": estimate_tokens(context),
                        "most relevant": "Most relevant:" in context,
                        "maybe relevant": context.count("\n- [mem:"),
                        "chars": len(context),
                    }
                )
            spooled += len(instance.spooled())
            problems += daemon_problems(instance)
    events = {
        s.id[:8]: {e: sum(h.event == e for h in s.hooks) for e in sorted({h.event for h in s.hooks})} for s in sessions
    }
    return {"sessions": events, "prompts": prompts, "starts": starts, "spooled": spooled, "problems": problems}


# --- latency ----------------------------------------------------------------------------------


def _latency(latency_: Latency | None) -> dict[str, float] | None:
    return None if latency_ is None else {k: getattr(latency_, k) for k in ("count", "p50", "p95", "p99")}


def _rtt(client: Client, request: Any, expect: type) -> tuple[float, Any]:
    started = time.perf_counter()
    reply = client.call(request, expect)
    return (time.perf_counter() - started) * 1000, reply


def _interleaved(count: int, warmup: int, runs: list[tuple[str, Any]]) -> dict[str, list[Any]]:
    """Call each named function once per round (round k = 0, 1, ...), the order rotated round by
    round; keep what they return, the first ``warmup`` rounds dropped."""
    out: dict[str, list[Any]] = {name: [] for name, _ in runs}
    for k in range(warmup + count):
        shift = k % len(runs)
        for name, run in runs[shift:] + runs[:shift]:
            value = run(k)
            if k >= warmup:
                out[name].append(value)
    return out


def latency(n: int, runs: int, warmup: int, seed: int) -> dict[str, Any]:
    classes = queries(Corpus(seed))
    qs = [q for _, q in classes]
    asked = [q["query"] for q in json.loads(EVAL_SET.read_text())["queries"]]  # 645 distinct questions
    token = uuid.uuid4().hex[:8]
    with corpus_daemon(n, seed) as (instance, root, ready_s):
        log(f"latency at {n:,}: ready in {ready_s:.1f} s, project {root}; {runs} runs")
        base = {"transcript_path": "/dev/null", "cwd": root, "permission_mode": "default"}

        def prompt(k: int, via: str, text: str = "", session: str = "") -> dict[str, Any]:
            """Round k's prompt: query k in turn (or ``text``), in a session of its own (or ``session``)."""
            return {
                **base,
                "session_id": session or f"bench-{token}-{via}-{k:04d}",
                "hook_event_name": "UserPromptSubmit",
                "prompt_id": str(uuid.uuid4()),
                "prompt": text or qs[k % len(qs)],
            }

        def new_prompt(k: int, later: bool) -> dict[str, Any]:
            """A question never asked before (nothing cached), as the first prompt of a new
            session or as a later prompt of one long session."""
            text = asked[(2 * k + later) % len(asked)]
            return prompt(k, "hook", text, session=f"bench-{token}-hook-later" if later else "")

        def start(k: int, via: str) -> dict[str, Any]:
            session = f"bench-{token}-{via}-start-{k:04d}"
            return {**base, "session_id": session, "hook_event_name": "SessionStart", "source": "startup"}

        def ingest(event: str, payload: dict[str, Any]) -> Ingest:
            return Ingest(event=event, sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())

        embedding = instance.status().embedding
        result: dict[str, Any] = {"n": n, "ready_s": ready_s, "root": root, "queries": len(qs)}
        result["backlog_at_ready"] = embedding.backlog if embedding else None
        first_seen: list[tuple[int, int]] = []  # (round, tokens) of every socket prompt, warm-up included
        with instance.client() as client:

            def ping(_: int) -> tuple[float, str]:
                return _rtt(client, Ping(), Pong)[0], ""

            def socket_prompt(k: int) -> tuple[float, str]:
                ms, reply = _rtt(client, ingest("UserPromptSubmit", prompt(k, "socket")), Ingested)
                first_seen.append((k, estimate_tokens(context_of(reply.stdout))))
                return ms, context_of(reply.stdout)

            def socket_start(k: int) -> tuple[float, str]:
                ms, reply = _rtt(client, ingest("SessionStart", start(k, "socket")), Ingested)
                return ms, context_of(reply.stdout)

            a1 = _interleaved(runs, warmup, [("ping", ping), ("UserPromptSubmit", socket_prompt)])
            result["daemon_prompt_only"] = _latency(instance.status().latency_ms.get("ingest"))
            a2 = _interleaved(runs, warmup, [("ping", ping), ("SessionStart", socket_start)])
        floor = python_floor(instance)
        b = _interleaved(
            runs,
            warmup,
            [
                ("python -I -S -c pass", floor),
                ("UserPromptSubmit", lambda k: run_hook(instance, "UserPromptSubmit", prompt(k, "hook"))),
                (NEW_QUESTIONS[0], lambda k: run_hook(instance, "UserPromptSubmit", new_prompt(k, False))),
                (NEW_QUESTIONS[1], lambda k: run_hook(instance, "UserPromptSubmit", new_prompt(k, True))),
                ("SessionStart", lambda k: run_hook(instance, "SessionStart", start(k, "hook"))),
            ],
        )
        status = instance.status()
        result["daemon_all"] = _latency(status.latency_ms.get("ingest"))
        result["events"] = status.events
        result["backlog_at_end"] = status.embedding.backlog if status.embedding else None
        result["spooled"] = len(instance.spooled())
        result["problems"] = daemon_problems(instance)
    series = {
        "socket round trip": {
            "ping (in the UserPromptSubmit runs)": a1["ping"],
            "UserPromptSubmit": a1["UserPromptSubmit"],
            "ping (in the SessionStart runs)": a2["ping"],
            "SessionStart": a2["SessionStart"],
        },
        "hook process": b,
    }
    result["ms"] = {
        group: {name: summary([ms for ms, _ in values]) for name, values in named.items()}
        for group, named in series.items()
    }
    by_class: dict[str, list[float]] = {}
    for k, (ms, _) in enumerate(a1["UserPromptSubmit"], warmup):
        by_class.setdefault(classes[k % len(qs)][0], []).append(ms)
    result["prompt_by_class"] = {name: median(values) for name, values in by_class.items()}
    result["contexts"] = {
        "socket UserPromptSubmit, each query's first time": [t for k, t in first_seen if k < len(qs)],
        "socket UserPromptSubmit, repeated queries": [t for k, t in first_seen if k >= len(qs)],
        "hook UserPromptSubmit (repeated queries)": [estimate_tokens(c) for _, c in b["UserPromptSubmit"]],
        **{f"hook {name}": [estimate_tokens(c) for _, c in b[name]] for name in NEW_QUESTIONS},
        "socket SessionStart": [estimate_tokens(c) for _, c in a2["SessionStart"]],
        "hook SessionStart": [estimate_tokens(c) for _, c in b["SessionStart"]],
    }
    return result


# --- report -----------------------------------------------------------------------------------


def report_efficiency(r: dict[str, Any]) -> str:
    headers = ["set", "queries", "with hits", "hits", "index tokens", "details tokens", "saving"]
    headers += ["index line median", "detail median", "advertised / details", "incomplete"]
    rows = [[s[h] if h != "saving" else f"{s[h]:.1%}" for h in headers] for s in r["sets"]]
    golden = next(s for s in r["sets"] if s["set"] == "all golden sets")
    synthetic = r["sets"][-1]
    verdicts = [
        f"{s['set']}: saving {s['saving']:.1%} (target >= {TARGET_SAVING:.0%}):"
        f" {'met' if s['saving'] >= TARGET_SAVING else 'NOT met'}"
        for s in (golden, synthetic)
    ]
    return "\n".join(
        [
            f"index vs details: Search(limit={LIMIT}) per query, then Details of the same hits"
            f" (budget {DETAILS_BUDGET:,}); estimated tokens",
            "",
            markdown_table(headers, rows),
            "",
            "`advertised / details`: the hits' own `~N tok` (Hit.tokens) over the details tokens measured;"
            " `incomplete`: ids missing, omitted or cut in the Details replies.",
            "",
            *verdicts,
        ]
    )


def _tokens_row(name: str, values: list[int], budget: int) -> list[object]:
    injected = [v for v in values if v]
    return [
        name,
        len(values),
        f"{len(injected) / len(values):.0%}" if values else "-",
        median(values),
        summary(values)["p95"] if values else 0,
        median(injected),
        summary(injected)["p95"] if injected else 0,
        max(values, default=0),
        sum(v > budget for v in values),
    ]


TOKEN_HEADERS = ["", "samples", "injected", "median", "p95", "median injected", "p95 injected", "max", "over budget"]


def report_replay(r: dict[str, Any]) -> str:
    sessions = "; ".join(
        f"{s}: " + ", ".join(f"{e} {c}" for e, c in events.items()) for s, events in r["sessions"].items()
    )
    prompt_rows = [
        [
            p["session"],
            p["n"],
            (p["prompt"][:70] + ("…" if len(p["prompt"]) > 70 else "")).replace("|", "\\|").replace("\n", " "),
            p["tokens"],
            "yes" if p["most relevant"] else "",
            p["maybe relevant"],
        ]
        for p in r["prompts"]
    ]
    starts = [[s["session"], s["history events"], s["tokens"], s["lines"], s["chars"]] for s in r["starts"]]
    tokens = [p["tokens"] for p in r["prompts"]]
    start_tokens = [s["tokens"] for s in r["starts"]]
    return "\n".join(
        [
            f"replayed sessions (hook events per transcript): {sessions}",
            "",
            "UserPromptSubmit through the real hook client, estimated tokens of additionalContext",
            "",
            markdown_table(["replayed", "#", "prompt", "tokens", "details", "index lines"], prompt_rows),
            "",
            markdown_table(
                TOKEN_HEADERS,
                [
                    _tokens_row(f"per prompt (budget {PROMPT_BUDGET})", tokens, PROMPT_BUDGET),
                    _tokens_row(f"SessionStart (budget {START_BUDGET})", start_tokens, START_BUDGET),
                ],
            ),
            "",
            "SessionStart (source startup) of each replayed session, after the other two",
            "",
            markdown_table(["replayed", "events stored before", "tokens", "lines", "chars"], starts),
            "",
            f"spooled frames: {r['spooled']}; daemon log warnings/errors: {len(r['problems'])}",
        ]
    )


def report_latency(results: list[dict[str, Any]], runs: int, warmup: int) -> str:
    rows: list[list[object]] = []
    for r in results:
        size = f"{r['n']:,}"
        for group, named in r["ms"].items():
            floor = named.get("python -I -S -c pass")
            for name, s in named.items():
                ratio = ""
                if floor and not name.startswith("python"):
                    ratio = f"{s['p50'] / floor['p50']:.2f} / {s['p95'] / floor['p95']:.2f}"
                rows.append([size, group, name, s["p50"], s["p95"], s["p99"], ratio])
        for label, latency_ in (("UserPromptSubmit only", r["daemon_prompt_only"]), ("all ingests", r["daemon_all"])):
            if latency_ is not None:
                group = f"daemon Status (n={latency_['count']})"
                rows.append([size, group, label, latency_["p50"], latency_["p95"], latency_["p99"], ""])
    context_rows = []
    for r in results:
        for name, values in r["contexts"].items():
            injected = [v for v in values if v]
            share = f"{len(injected) / len(values):.0%}" if values else "-"
            context_rows.append([f"{r['n']:,}", name, len(values), share, median(injected), max(values, default=0)])
    names = list(dict.fromkeys(name for r in results for name in r["prompt_by_class"]))
    class_rows = [[name, *(r["prompt_by_class"].get(name, "") for r in results)] for name in names]
    verdicts = []
    for r in results:
        if (target := TARGET_DAEMON_P50.get(r["n"])) is not None:
            p50 = r["ms"]["socket round trip"]["UserPromptSubmit"]["p50"]
            verdicts.append(
                f"N={r['n']:,}: UserPromptSubmit over the socket p50 {p50:.2f} ms (target <= {target}):"
                f" {'met' if p50 <= target else 'NOT met'}"
            )
        if (target := TARGET_HOOK_P50.get(r["n"])) is not None:
            p50 = r["ms"]["hook process"]["UserPromptSubmit"]["p50"]
            verdicts.append(
                f"N={r['n']:,}: UserPromptSubmit hook process p50 {p50:.2f} ms (target <= {target}):"
                f" {'met' if p50 <= target else 'NOT met'}"
            )
        floor = r["ms"]["hook process"]["python -I -S -c pass"]["p50"]
        for name in NEW_QUESTIONS if (target := TARGET_HOOK_RATIO.get(r["n"])) is not None else ():
            ratio = r["ms"]["hook process"][name]["p50"] / floor
            verdicts.append(
                f"N={r['n']:,}: {name}: hook p50 {ratio:.2f} x python -I -S -c pass (target <= {target}):"
                f" {'met' if ratio <= target else 'NOT met'}"
            )
        verdicts.append(
            f"N={r['n']:,}: ready {r['ready_s']:.1f} s after start; embedding backlog {r['backlog_at_ready']} then"
            f" {r['backlog_at_end']} at the end; events at the end {r['events']};"
            f" spooled {r['spooled']}; daemon log warnings/errors {len(r['problems'])}"
        )
    return "\n".join(
        [
            f"latency, ms: {runs} interleaved runs of each (+{warmup} warm-up); ratio = hook / floor (p50 / p95)",
            "",
            markdown_table(["events", "measured", "what", "p50", "p95", "p99", "ratio"], rows),
            "",
            f"context blocks returned (estimated tokens); the {results[0]['queries'] if results else 0} queries"
            " are taken in turn, so from the second round on a prompt's own earlier copy is a memory",
            "",
            markdown_table(["events", "series", "runs", "with context", "median tokens (with)", "max"], context_rows),
            "",
            "UserPromptSubmit over the socket, median ms by query class (search.py's classes)",
            "",
            markdown_table(["class", *(f"{r['n']:,}" for r in results)], class_rows),
            "",
            *verdicts,
        ]
    )


def main() -> int:
    args, parts, sizes = parse_arguments(__doc__ or "", "efficiency,replay,latency")
    out: dict[str, Any] = {}
    if "efficiency" in parts:
        out["efficiency"] = efficiency(args.seed)
    if "replay" in parts:
        out["replay"] = replay()
    if "latency" in parts:
        out["latency"] = [latency(n, args.runs, args.warmup, args.seed) for n in sizes]
    emit(
        out,
        args.json,
        {
            "efficiency": report_efficiency,
            "replay": report_replay,
            "latency": lambda results: report_latency(results, args.runs, args.warmup),
        },
    )
    return 0


def emit(out: dict[str, Any], as_json: bool, reports: dict[str, Callable[[Any], str]]) -> None:
    """Print the parts' results (as JSON, or each part's report in turn), then the daemons' log problems."""
    if as_json:
        print(json.dumps(out, indent=2))
        return
    print("\n\n".join(report(out[part]) for part, report in reports.items() if part in out))
    problems = [p for part in out.values() for r in (part if isinstance(part, list) else [part]) for p in r["problems"]]
    if problems:
        print("\ndaemon log, warnings and errors:\n\n" + "\n".join(f"    {p}" for p in problems[:20]))


if __name__ == "__main__":
    sys.exit(main())
