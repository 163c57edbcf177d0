"""Capture: hook payloads in, normalized and privacy-filtered events out, and what a stored
event derives (summary, snapshot, task rules), as pure functions but for ``project_root``
and ``project_key``, which look at the filesystem (the git top-level, the git config), and
``claude_folder``, which reads Claude Code's settings to find its memory folder.

The package imports nothing itself: ``memctl`` reads the event kinds (``capture.events``)
without paying for the privacy filter's ~100 rules (``capture.prepare``).
"""
