"""What the hook client prints back to Claude Code: hook output JSON, rendered here.

Claude Code reads a hook's stdout as JSON when it starts with ``{``: a
``systemMessage`` is shown to the user; ``hookSpecificOutput.additionalContext``
(always nested there, with the right ``hookEventName``) goes to the agent.  Output
over 10,000 characters is cut by Claude Code, so nothing here may exceed it.
"""

from __future__ import annotations

import json

__all__ = ["MAX_OUTPUT", "UNCLOSED_PRIVATE_NOTICE", "hook_output"]

MAX_OUTPUT = 10_000

UNCLOSED_PRIVATE_NOTICE = (
    "memd: a <private> tag in this prompt was never closed, so everything after it was treated as private "
    "and not stored. Close it with </private> next time if only part was private."
)


def hook_output(event: str, *, context: str = "", system_message: str = "") -> str:
    """The stdout for a hook, or ``""`` when there is nothing to say."""
    output: dict[str, object] = {}
    if system_message:
        output["systemMessage"] = system_message
    if context:
        output["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": context}
    if not output:
        return ""
    rendered = json.dumps(output, ensure_ascii=False)
    if len(rendered) > MAX_OUTPUT:
        raise ValueError(f"hook output of {len(rendered)} characters exceeds Claude Code's {MAX_OUTPUT}")
    return rendered
