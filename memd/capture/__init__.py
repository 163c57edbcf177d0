"""Capture: hook payloads in, normalized events out (pure functions but for ``project_root``)."""

from .prepare import InvalidPayload, NewEvent, prepare
from .project import project_root

__all__ = ["InvalidPayload", "NewEvent", "prepare", "project_root"]
