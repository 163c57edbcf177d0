"""What a service raises for the server to answer as an error reply."""

from __future__ import annotations

__all__ = ["NotFound", "not_found"]


class NotFound(Exception):
    """An id that names no memory; the message says which and what to try."""

    code = "not_found"


def not_found(ref: str) -> NotFound:
    return NotFound(f"no memory {ref!r}: use an id from search results (mem:Ab3xY9, or an event number)")
