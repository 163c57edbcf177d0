"""Forgetting by query: the events that hold every word of a query, or the query verbatim.

``by_query`` asks the database (the keyword index for words, the trigram index or a LIKE
scan for CJK words, a LIKE scan and a whole-word match of the stored record for the
phrase); ``document_matches`` asks the same of one event outside it (a spooled frame),
through an in-memory FTS5 table that tokenizes like the keyword index.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Final, NamedTuple

from ..query import has_cjk, tokens
from .schema import TOKENIZER

__all__ = ["QueryTerms", "by_query", "document_matches", "query_terms", "scratch_index"]

MAX_QUERY_WORDS: Final = 32
MIN_VERBATIM: Final = 3
"""Shortest query also looked for verbatim in the stored records."""


class QueryTerms(NamedTuple):
    """What ``--query`` looks for: every word, and the whole text verbatim."""

    words: tuple[str, ...]
    """The words as the indexes see them (NFKC, casefolded), none dropped: a forget never
    widens silently.  Words with CJK characters are matched as substrings (Korean words
    carry particles), the others as words of the keyword index, stemmed as search stems
    them (``token`` also forgets ``tokens``)."""
    phrase: str
    """The query as typed, looked for in each event's stored record (payload and meta),
    whole-word and case-insensitively: a secret in the part of a tool's output the index
    does not hold (Read keeps only a file's head as searchable text) goes too."""


def query_terms(text: str) -> QueryTerms:
    words = tuple(dict.fromkeys(tokens(text)))[:MAX_QUERY_WORDS]
    phrase = text.strip()
    return QueryTerms(words, phrase if len(phrase) >= MIN_VERBATIM else "")


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _word_select(word: str) -> tuple[str, list[object]]:
    """SQL for the events holding ``word``, and its arguments."""
    if not has_cjk(word):
        return "SELECT rowid FROM events_fts WHERE events_fts MATCH ?", [_quote(word)]
    if len(word) >= 3:  # the trigram index finds substrings of three characters or more
        return "SELECT rowid FROM events_cjk WHERE events_cjk MATCH ?", [_quote(word)]
    pattern = f"%{_escape_like(word)}%"
    return "SELECT rowid FROM events_cjk WHERE title LIKE ? ESCAPE '\\' OR text LIKE ? ESCAPE '\\'", [pattern, pattern]


def _verbatim(phrase: str) -> re.Pattern[str]:
    """``phrase`` as it is written inside a JSON string, as a whole word, in any case."""
    escaped = re.escape(json.dumps(phrase, ensure_ascii=False)[1:-1])
    before = r"(?<!\w)" if re.match(r"\w", phrase) else ""
    after = r"(?!\w)" if re.search(r"\w$", phrase) else ""
    return re.compile(before + escaped + after, re.IGNORECASE)


def by_query(conn: sqlite3.Connection, terms: QueryTerms, project_id: int | None) -> list[int]:
    """The events of one project (or all: None) that hold every word of ``terms``, or its
    phrase verbatim in their stored record.  Never a vector neighbour: a forget deletes
    what it can show to hold the words."""
    scope, scope_args = (" AND project_id = ?", [project_id]) if project_id is not None else ("", [])
    found: set[int] = set()
    if terms.words:
        selects = [_word_select(word) for word in terms.words]
        every = " INTERSECT ".join(sql for sql, _ in selects)
        args = [arg for _, word_args in selects for arg in word_args]
        found.update(row[0] for row in conn.execute(f"SELECT id FROM events WHERE id IN ({every}){scope}",
                                                    [*args, *scope_args]))  # fmt: skip
    if terms.phrase:
        pattern = _verbatim(terms.phrase)
        like = f"%{_escape_like(json.dumps(terms.phrase, ensure_ascii=False)[1:-1])}%"
        for event_id, payload, meta in conn.execute(
            "SELECT id, payload, meta FROM events WHERE (payload LIKE ? ESCAPE '\\' OR meta LIKE ? ESCAPE '\\')"
            + scope,
            [like, like, *scope_args],
        ):
            if pattern.search(payload) or pattern.search(meta):
                found.add(event_id)
    return sorted(found)


def document_matches(scratch: sqlite3.Connection, terms: QueryTerms, title: str, text: str, record: str) -> bool:
    """``by_query``'s test for one event outside the database (a spooled frame, as capture
    would store it).  ``scratch`` is an in-memory connection (``scratch_index``): its FTS5
    table tokenizes and stems like the keyword index."""
    if terms.phrase and _verbatim(terms.phrase).search(record):
        return True
    if not terms.words:
        return False
    folded = f"{title}\n{text}".casefold()
    scratch.execute("DELETE FROM doc")
    scratch.execute("INSERT INTO doc (rowid, title, text) VALUES (1, ?, ?)", (title, text))
    for word in terms.words:
        if has_cjk(word):
            if word not in folded:
                return False
        elif not scratch.execute("SELECT 1 FROM doc WHERE doc MATCH ?", (_quote(word),)).fetchone():
            return False
    return True


def scratch_index() -> sqlite3.Connection:
    """An in-memory table tokenized like ``events_fts``, for ``document_matches``."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute(f"CREATE VIRTUAL TABLE doc USING fts5(title, text, tokenize='{TOKENIZER}')")
    return conn
