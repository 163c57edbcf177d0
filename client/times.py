"""Times as people type them, for ``--since``/``--until`` and the MCP tools' ``since``."""

from __future__ import annotations

import time
from datetime import datetime

__all__ = ["parse_time"]

_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_time(text: str, now: float | None = None) -> float:
    """A Unix time from an ISO date or datetime (local time) or an age (30m, 12h, 7d, 2w).
    Raises ValueError with a message that shows the accepted forms."""
    text = text.strip()
    if text[:-1].isdigit() and text[-1:].lower() in _UNITS:
        return (time.time() if now is None else now) - int(text[:-1]) * _UNITS[text[-1].lower()]
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time: use a date (2026-11-21), a datetime (2026-11-21T14:00) or an age (12h, 7d)"
        ) from None
