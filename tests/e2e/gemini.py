"""The real ``gemini`` CLI in headless mode (``gemini -p``), run against memd and the fake API.

``GeminiUser`` gives one isolated Gemini CLI user: its own HOME with a ``settings.json``
that points it at the fake (API-key auth, an explicit model so that no routing call is
made, usage statistics off: no other network call), memd installed as a user would
(``memctl install --agent gemini``) beside a recorder hook on the same events, the ground
truth of what Gemini CLI fired.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import Instance

from e2e.harness import AgentUser
from memd_client import gemini

MODEL = "gemini-2.5-flash"


class GeminiUser(AgentUser):
    """One Gemini CLI user with memd installed by ``memctl install --agent gemini``."""

    def __init__(
        self, binary: str, api_url: str, memd: Instance, root: Path, project: Path | None = None, *,
        with_memd: bool = True, extension: bool = False,
    ) -> None:  # fmt: skip
        super().__init__(binary, memd, root, project)
        (self.home / ".gemini").mkdir(parents=True, exist_ok=True)
        self.env |= {
            "GEMINI_API_KEY": "AIza-e2e-fake-gemini-key-never-stored",
            "GOOGLE_GEMINI_BASE_URL": api_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",  # one process: the relaunching wrapper ignores SIGTERM
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "model": {"name": MODEL},
            "hooks": {
                e: [{"hooks": [{"type": "command", "name": f"recorder-{e}", "command": f"sh {self.recorder} {e}"}]}]
                for e in gemini.HOOKS
            },
        }
        (self.home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2))
        if with_memd:  # a user without memd: the same CLI and recorder, to time memd's share
            self.memctl("--socket", memd.paths.socket, "install", "--agent", "gemini", *["--extension"][:extension])

    def run(self, prompt: str, *, resume: bool = False, timeout: float = 120.0) -> tuple[str, float]:
        """``gemini -p PROMPT --yolo`` (``--resume latest``: the latest session) in the project:
        its answer and how long the run took."""
        argv = [self.binary, "-p", prompt, "--yolo", "-m", MODEL, *(["--resume", "latest"] if resume else [])]
        return self.headless(argv, timeout)


def signature(payload: dict[str, Any]) -> tuple[str, ...]:
    """One fired event: Gemini CLI stamps each with the time it fired."""
    return tuple(str(payload.get(k) or "") for k in ("hook_event_name", "session_id", "timestamp"))


def fired(user: GeminiUser) -> Counter[tuple[str, ...]]:
    return Counter(signature(p) for p in user.fired())


def stored(memd: Instance) -> Counter[tuple[str, ...]]:
    rows = memd.query("SELECT payload FROM events WHERE agent = 'gemini' AND event != 'memd'")
    return Counter(signature(json.loads(payload)) for (payload,) in rows)
