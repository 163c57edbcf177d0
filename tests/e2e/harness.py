"""The real ``claude`` CLI in headless mode, run against memd and the fake API.

``ClaudeCode`` gives one isolated Claude Code user: its own HOME (settings, plugin
cache, transcripts), a project directory, and memd's hooks installed one of two ways,
as a new user would: the plugin (``--plugin-dir`` on this checkout) or ``memctl install
--settings``.  Beside memd's hooks it installs a recorder, a shell hook on every event
that writes each payload Claude Code sends to its own file: the ground truth of what
Claude Code fired, against which the tests check what memd stored.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import Instance

REPO = Path(__file__).resolve().parents[2]
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStop",
    "SessionEnd",
)
"""The events memd hooks (client/install.py HOOKS), recorded beside it."""
TOOLS = "Bash Read Write Edit TodoWrite ToolSearch mcp__memd mcp__plugin_memd_memd"

RECORDER = """#!/bin/sh
# One file per payload: parallel hooks must not interleave their writes.
out="$RECORD_DIR/$(date +%s%N)-$$-$1.json"
cat > "$out.tmp" && mv "$out.tmp" "$out"
"""


@dataclass
class Run:
    """One ``claude -p`` run: how it ended, what it printed, how long it took."""

    returncode: int
    result: dict[str, Any]
    stderr: str
    seconds: float
    debug: str

    @property
    def session_id(self) -> str:
        return str(self.result.get("session_id", ""))


class AgentUser:
    """What every agent's test user has: a root of its own with a HOME, a project directory,
    the recorder hook (``RECORDER``) and the directory it writes to, and memctl."""

    def __init__(self, binary: str, memd: Instance, root: Path, project: Path | None = None) -> None:
        self.binary = binary
        self.memd = memd
        self.home = root / "home"
        self.project = project or root / "project"
        self.records = root / "fired"
        for d in (self.home, self.project, self.records):
            d.mkdir(parents=True, exist_ok=True)
        self.recorder = root / "recorder.sh"
        self.recorder.write_text(RECORDER)
        self.recorder.chmod(0o755)
        self.env: dict[str, str] = {**memd.env, "HOME": str(self.home), "RECORD_DIR": str(self.records)}

    def memctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*self.memd.memctl_argv(), *args], capture_output=True, text=True, env=self.env, timeout=120
        )
        assert done.returncode == 0, f"memctl {' '.join(args)}: {done.stderr}"
        return done

    def headless(self, argv: list[str], timeout: float) -> tuple[str, float]:
        """Run the agent's CLI headless in the project, stdin closed: (its output, seconds taken)."""
        started = time.monotonic()
        done = subprocess.run(
            argv, cwd=self.project, env=self.env, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        seconds = time.monotonic() - started
        assert done.returncode == 0, f"{' '.join(argv[:2])} failed ({done.returncode}): {done.stderr[-3000:]}"
        return done.stdout.strip(), seconds

    def fired(self) -> list[dict[str, Any]]:
        """Every payload the agent sent to a hook so far, in the order they fired."""
        payloads = []
        for path in sorted(self.records.glob("*.json")):
            raw = path.read_bytes()
            payload = json.loads(raw) if raw.strip() else {}
            payload["_recorded_as"] = path.name.rsplit("-", 1)[-1].removesuffix(".json")
            payloads.append(payload)
        return payloads


class ClaudeCode(AgentUser):
    """One Claude Code user with memd installed as ``mode`` says ("plugin", "settings" or "none")."""

    def __init__(
        self,
        binary: str,
        api_url: str,
        memd: Instance,
        root: Path,
        mode: str,
        *,
        record: bool = True,
        plugin_dir: Path = REPO,
    ):
        super().__init__(binary, memd, root)
        self.plugin_dir = plugin_dir
        self.mode = mode
        self.debug_dir = root / "debug"
        for d in (self.home / ".claude", self.debug_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.env |= {
            "ANTHROPIC_BASE_URL": api_url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-fake",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
        }
        for var in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_SESSION_ID"):
            self.env.pop(var, None)
        self.settings = self.home / ".claude" / "settings.json"
        settings: dict[str, Any] = {}
        if record:
            recorder = self.recorder
            settings["hooks"] = {e: [{"hooks": [{"type": "command", "command": f"sh {recorder} {e}"}]}] for e in EVENTS}
        self.settings.write_text(json.dumps(settings, indent=2))
        if mode == "settings":
            self.memctl("install", "--settings", str(self.settings))
            self.memctl("mcp", "install")
        elif mode == "plugin":
            self.memctl("launcher", "--record")
        self._runs = 0

    def run(self, prompt: str, *args: str, timeout: float = 120.0) -> Run:
        """``claude -p PROMPT ARGS...`` in the project; its JSON result."""
        self._runs += 1
        debug = self.debug_dir / f"run-{self._runs}.log"
        argv = [self.binary, "-p", prompt, "--output-format", "json", "--allowedTools", TOOLS]
        argv += ["--debug-file", str(debug)]
        if self.mode == "plugin":
            argv += ["--plugin-dir", str(self.plugin_dir)]
        started = time.monotonic()
        done = subprocess.run(
            [*argv, *args], cwd=self.project, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        seconds = time.monotonic() - started
        try:
            result = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
        except ValueError:
            result = {"raw": done.stdout}
        text = debug.read_text(errors="replace") if debug.exists() else ""
        assert done.returncode == 0, f"claude -p failed ({done.returncode}): {done.stderr[-2000:]}\n{text[-3000:]}"
        return Run(done.returncode, result, done.stderr, seconds, text)

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        (path,) = (self.home / ".claude" / "projects").glob(f"*/{session_id}.jsonl")
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def transcript_path(self, session_id: str) -> Path:
        (path,) = (self.home / ".claude" / "projects").glob(f"*/{session_id}.jsonl")
        return path


# --- what fired against what memd stored ---------------------------------------------


def signature(event: str, payload: dict[str, Any]) -> tuple[str, ...]:
    """What tells one fired event from another of the same session (two compactions in one prompt
    share every field, so the multiset of signatures is compared, not the set)."""
    keys = ("session_id", "tool_use_id", "prompt_id", "source", "agent_id", "trigger", "reason")
    return (event, *(str(payload.get(k) or "") for k in keys))


def stored(user: ClaudeCode) -> Counter[tuple[str, ...]]:
    rows = user.memd.query("SELECT event, payload FROM events WHERE event != 'memd'")
    return Counter(signature(event, json.loads(payload)) for event, payload in rows)


def fired(user: ClaudeCode, skip=lambda p: False) -> Counter[tuple[str, ...]]:
    return Counter(signature(p["_recorded_as"], p) for p in user.fired() if not skip(p))


def compaction_agent(payload: dict[str, Any]) -> bool:
    """The compaction's own SubagentStop: memd stores its summary once, as the PostCompact event."""
    return payload["_recorded_as"] == "SubagentStop" and not payload.get("agent_type")


def assert_stored_once(
    fired: Callable[[], Counter[tuple[str, ...]]], stored: Callable[[], Counter[tuple[str, ...]]], timeout: float = 10.0
) -> None:
    """Every event the agent fired is in memd's store exactly once (waiting for the last hooks)."""
    deadline = time.monotonic() + timeout
    while (have := stored()) != (want := fired()) and time.monotonic() < deadline:
        time.sleep(0.05)
    missing, extra = want - have, have - want
    assert not missing and not extra, f"missing (fired, not stored): {missing}\nextra (stored, not fired): {extra}"
