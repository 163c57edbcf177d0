"""A compaction summary's body, whichever way it arrives.

Claude Code hands the same summary over in two wrappings: the PostCompact hook's
``compact_summary`` is the model's raw answer (``<analysis>…</analysis>`` then
``<summary>…</summary>``), and the transcript's ``isCompactSummary`` record, which
``memctl import`` reads, is the text the model is sent after the compaction ("This
session is being continued…", ``Summary:``, the body, then instructions).  memd stores
the body alone, so one compaction is one memory with one key however it came in.
"""

from __future__ import annotations

__all__ = ["summary_body"]

_CONTINUED = "This session is being continued"
_BODY_START = "\nSummary:\n"
_BODY_ENDS = ("\n\nIf you need specific details", "\n\nContinue the conversation", "\n\nPlease continue")


def summary_body(text: str) -> str:
    """The summary itself, without the model's analysis or Claude Code's framing."""
    opened = text.rfind("<summary>")
    if opened >= 0:
        body = text[opened + len("<summary>") :]
        closed = body.rfind("</summary>")
        return (body[:closed] if closed >= 0 else body).strip()
    if text.lstrip().startswith(_CONTINUED) and (start := text.find(_BODY_START)) >= 0:
        body = text[start + len(_BODY_START) :]
        ends = [i for i in (body.find(end) for end in _BODY_ENDS) if i >= 0]
        return (body[: min(ends)] if ends else body).strip()
    return text.strip()
