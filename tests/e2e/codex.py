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
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import Instance

from e2e.harness import RECORDER, signature
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


class CodexUser:
    """One Codex CLI user with memd installed by ``memctl install --agent codex``."""

    def __init__(self, binary: str, api_url: str, memd: Instance, root: Path, project: Path | None = None) -> None:
        self.binary = binary
        self.memd = memd
        self.home = root / "home"
        self.codex_home = self.home / ".codex"
        self.project = project or root / "project"
        self.records = root / "fired"
        for d in (self.codex_home, self.project, self.records):
            d.mkdir(parents=True, exist_ok=True)
        self.env = {
            **memd.env,
            "HOME": str(self.home),
            "CODEX_HOME": str(self.codex_home),
            "OPENAI_API_KEY": "sk-openai-e2e-fake-key-never-stored",
            "RECORD_DIR": str(self.records),
            "SHELL": "/bin/sh",
        }
        recorder = root / "recorder.sh"
        recorder.write_text(RECORDER)
        recorder.chmod(0o755)
        hooks = {"hooks": {e: [{"hooks": [{"type": "command", "command": f"sh {recorder} {e}"}]}] for e in codex.HOOKS}}
        hooks_path = self.codex_home / "hooks.json"
        hooks_path.write_text(json.dumps(hooks, indent=2))
        source = os.path.realpath(hooks_path)
        trusted = codex.hook_keys(source, hooks, memd=False)
        trust = "".join(f'[hooks.state."{key}"]\ntrusted_hash = "{digest}"\n\n' for key, digest in trusted.items())
        (self.codex_home / "config.toml").write_text(CONFIG.format(url=api_url) + "\n" + trust)
        self.memctl("--socket", memd.paths.socket, "install", "--agent", "codex")

    def memctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [*self.memd.memctl_argv(), *args]
        done = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=120)
        assert done.returncode == 0, f"memctl {' '.join(args)}: {done.stderr}"
        return done

    def run(self, prompt: str, *, resume: bool = False, timeout: float = 120.0) -> tuple[str, float]:
        """``codex exec PROMPT`` (``resume --last`` for the latest session) in the project: its
        answer and how long the run took."""
        argv = [self.binary, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
        argv += ["resume", "--last", prompt] if resume else [prompt]
        started = time.monotonic()
        done = subprocess.run(
            argv, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        seconds = time.monotonic() - started
        assert done.returncode == 0, f"codex exec failed ({done.returncode}): {done.stderr[-3000:]}"
        return done.stdout.strip(), seconds

    def fired(self) -> list[dict[str, Any]]:
        """Every payload Codex sent to a hook so far, in the order they fired."""
        payloads = []
        for path in sorted(self.records.glob("*.json")):
            raw = path.read_bytes()
            payload = json.loads(raw) if raw.strip() else {}
            payload["_recorded_as"] = path.name.rsplit("-", 1)[-1].removesuffix(".json")
            payloads.append(payload)
        return payloads


def fired(user: CodexUser) -> Counter[tuple[str, ...]]:
    return Counter(signature(p["_recorded_as"], _keyed(p)) for p in user.fired())


def stored(memd: Instance) -> Counter[tuple[str, ...]]:
    rows = memd.query("SELECT event, payload FROM events WHERE agent = 'codex' AND event != 'memd'")
    return Counter(signature(event, _keyed(json.loads(payload))) for event, payload in rows)


def _keyed(payload: dict[str, Any]) -> dict[str, Any]:
    """Codex's turn id stands for Claude Code's prompt id (memd keys a turn's prompt and Stop by it)."""
    return {**payload, "prompt_id": payload.get("prompt_id") or payload.get("turn_id")}
