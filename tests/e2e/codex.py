"""The real ``codex`` CLI in headless mode (``codex exec``), run against memd and the fake API.

``CodexUser`` gives one isolated Codex CLI user: its own HOME and ``CODEX_HOME``, a config
that points Codex at the fake Responses API (and switches off its analytics and plugin
sync: no other network call), memd installed as a user would (``memctl install --agent
codex``), and a recorder beside memd's hooks: a shell hook on the same events that writes
each payload Codex sends, trusted as memd's are, the ground truth of what Codex fired.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import Instance

from e2e.harness import AgentUser, signature
from memd_client import codex

AUTO_COMPACT = 200_000
"""Codex's auto-compaction limit in these tests: only a step marked ``!`` passes it."""

CONFIG = f"""model = "memd-e2e-model"
model_provider = "fake"
model_auto_compact_token_limit = {AUTO_COMPACT}
check_for_update_on_startup = false

[model_providers.fake]
name = "memd e2e fake"
base_url = "{{url}}"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
"""


class CodexUser(AgentUser):
    """One Codex CLI user with memd installed by ``memctl install --agent codex``."""

    def __init__(
        self, binary: str, api_url: str, memd: Instance, root: Path, project: Path | None = None, *,
        with_memd: bool = True,
    ) -> None:  # fmt: skip
        super().__init__(binary, memd, root, project)
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(parents=True, exist_ok=True)
        self.env |= {
            "CODEX_HOME": str(self.codex_home),
            "OPENAI_API_KEY": "sk-openai-e2e-fake-key-never-stored",
            "SHELL": "/bin/sh",
        }
        hooks = {
            "hooks": {e: [{"hooks": [{"type": "command", "command": f"sh {self.recorder} {e}"}]}] for e in codex.HOOKS}
        }
        hooks_path = self.codex_home / "hooks.json"
        hooks_path.write_text(json.dumps(hooks, indent=2))
        trusted = codex.hook_keys(os.path.realpath(hooks_path), hooks, memd=False)
        trust = "".join(f'[hooks.state."{key}"]\ntrusted_hash = "{digest}"\n\n' for key, digest in trusted.items())
        (self.codex_home / "config.toml").write_text(CONFIG.format(url=api_url) + "\n" + trust)
        if with_memd:  # a user without memd: the same CLI and recorder, to time memd's share
            self.memctl("--socket", memd.paths.socket, "install", "--agent", "codex")

    def run(self, prompt: str, *, resume: bool = False, timeout: float = 120.0) -> tuple[str, float]:
        """``codex exec PROMPT`` (``resume --last`` for the latest session) in the project: its
        answer and how long the run took."""
        argv = [self.binary, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
        argv += ["resume", "--last", prompt] if resume else [prompt]
        return self.headless(argv, timeout)


def fired(user: CodexUser) -> Counter[tuple[str, ...]]:
    return Counter(signature(p["_recorded_as"], _keyed(p)) for p in user.fired())


def stored(memd: Instance) -> Counter[tuple[str, ...]]:
    rows = memd.query("SELECT event, payload FROM events WHERE agent = 'codex' AND event != 'memd'")
    return Counter(signature(event, _keyed(json.loads(payload))) for event, payload in rows)


def _keyed(payload: dict[str, Any]) -> dict[str, Any]:
    """Codex's turn id stands for Claude Code's prompt id (memd keys a turn's prompt and Stop by it)."""
    return {**payload, "prompt_id": payload.get("prompt_id") or payload.get("turn_id")}
