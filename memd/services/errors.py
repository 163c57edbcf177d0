"""What a service raises for the server to answer as an error reply, and how a failure met
outside (a sync server) is told."""

from __future__ import annotations

__all__ = ["NotFound", "cause_of", "not_found", "problem"]


class NotFound(Exception):
    """An id that names no memory; the message says which and what to try."""

    code = "not_found"


def not_found(ref: str) -> NotFound:
    return NotFound(f"no memory {ref!r}: use an id from search results (mem:Ab3xY9Kq, or an event number)")


def cause_of(exc: BaseException) -> BaseException:
    """The error itself, out of the task groups it came through (the wait for the server's
    NOTIFY runs in one): ``OperationalError: server closed the connection``, not
    ``ExceptionGroup: unhandled errors in a TaskGroup``."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def problem(exc: BaseException) -> str:
    """What went wrong, for status and logs: the error's class and first line (of the error
    itself, out of any task group), which psycopg keeps free of passwords; never content."""
    exc = cause_of(exc)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:300]
