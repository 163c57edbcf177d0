"""Capture: hook payloads in, normalized and privacy-filtered events out.

Pure functions throughout but for ``project_root``, which looks at the filesystem.
"""

from .events import KINDS, Normalized, Skipped, normalize
from .prepare import Capture, InvalidPayload, NewEvent
from .project import project_root

__all__ = ["KINDS", "Capture", "InvalidPayload", "NewEvent", "Normalized", "Skipped", "normalize", "project_root"]
