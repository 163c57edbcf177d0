"""Structured JSON logs, to stderr and to a rotating file in the state directory.

The rule for every log call in memd: ids, kinds, sizes and counts only, never
event content (prompts, tool output, file text).  Content may hold secrets.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys

import structlog

__all__ = ["configure"]

LOG_MAX_BYTES = 10 * 1024 * 1024
LOG_BACKUPS = 3


def configure(level: str, log_file: str | None, *, stderr: bool = True) -> None:
    """JSON lines at ``level`` and above, to ``log_file`` (rotated) and, if ``stderr``, to
    stderr too (a terminal, the journal; not a file nobody rotates)."""
    timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_log_level, structlog.stdlib.add_logger_name, timestamper],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
    )
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)] if stderr or not log_file else []
    if log_file:
        os.makedirs(os.path.dirname(log_file), mode=0o700, exist_ok=True)
        handlers.append(logging.handlers.RotatingFileHandler(log_file, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS))
    root = logging.getLogger()
    root.handlers.clear()
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(level.upper())
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            timestamper,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
