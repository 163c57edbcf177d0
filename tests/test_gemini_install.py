"""memd in Gemini CLI's settings.json: its hooks (where memd is, in their own env) and its MCP server.

The end-to-end proof that Gemini CLI runs what this writes is ``tests/e2e/test_gemini_e2e.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import Instance

from memd_client import gemini

HOOK = "/venv/bin/python -I -S /venv/site-packages/memd_client/hook.py {} --agent gemini"
SERVER = {"command": "/venv/bin/python", "args": ["-I", "-S", "/venv/site-packages/memd_client/mcp/serve.py"]}
ENV = {"MEMD_SOCKET": "/run/user/1000/memd/memd.sock", "XDG_STATE_HOME": "/home/me/.state", "GEMINI_API_KEY": "AIza-x"}


def test_install_keeps_the_user_s_settings_and_is_idempotent() -> None:
    mine = {
        "model": {"name": "gemini-2.5-pro"},
        "hooks": {"AfterTool": [{"hooks": [{"type": "command", "command": "x"}]}]},
    }
    settings = gemini.with_memd(mine, HOOK.format, ENV, SERVER)
    assert settings["model"] == {"name": "gemini-2.5-pro"}
    assert settings["hooks"]["AfterTool"][0] == mine["hooks"]["AfterTool"][0]  # the user's first, kept
    assert set(settings["hooks"]) == set(gemini.HOOKS)  # not PreCompress, not the model events
    (hook,) = settings["hooks"]["BeforeAgent"][0]["hooks"]
    assert hook["command"] == HOOK.format("BeforeAgent") and hook["timeout"] == 10_000  # milliseconds
    assert hook["env"] == {"MEMD_SOCKET": ENV["MEMD_SOCKET"], "XDG_STATE_HOME": "/home/me/.state"}  # no API key
    server = settings["mcpServers"]["memd"]
    assert server["trust"] is True and server["excludeTools"] == ["mem_forget"]
    assert gemini.with_memd(settings, HOOK.format, ENV, SERVER) == settings


def test_uninstall_takes_out_exactly_memd() -> None:
    mine = {"hooks": {"AfterTool": [{"hooks": [{"type": "command", "command": "x"}]}]}, "mcpServers": {"other": {}}}
    settings = gemini.with_memd(mine, HOOK.format, ENV, SERVER)
    assert gemini.without_memd(settings) == mine


def test_memctl_installs_memd_as_a_gemini_extension_and_takes_it_out(instance: Instance, tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings_path = home / ".gemini" / "settings.json"
    settings_path.parent.mkdir(parents=True)
    settings_path.write_text(json.dumps({"model": {"name": "gemini-2.5-pro"}}))
    env = {**instance.env, "HOME": str(home)}

    def memctl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*instance.memctl_argv(), *args], env=env, capture_output=True, text=True, timeout=60)

    assert memctl("install", "--agent", "gemini").returncode == 0  # first the settings way, then switched
    done = memctl("install", "--agent", "gemini", "--extension")
    assert done.returncode == 0, done.stderr
    folder = home / ".gemini" / "extensions" / "memd"
    manifest = json.loads((folder / "gemini-extension.json").read_text())
    assert manifest["name"] == "memd" and manifest["version"]
    hooks = json.loads((folder / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == set(gemini.HOOKS)
    assert hooks["BeforeAgent"][0]["hooks"][0]["command"].endswith("BeforeAgent --agent gemini")
    settings = json.loads(settings_path.read_text())
    assert "hooks" not in settings and settings["mcpServers"]["memd"]["trust"] is True  # the server stays here
    assert settings["model"] == {"name": "gemini-2.5-pro"}
    assert sorted(os.listdir(folder)) == ["gemini-extension.json", "hooks"]  # memd's own files: no backups
    again = memctl("install", "--agent", "gemini", "--extension")
    assert again.returncode == 0 and "wrote" not in again.stdout  # twice is once
    doctor = memctl("doctor", "--json")
    (agents,) = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "agents"]
    assert agents["level"] == "ok", agents
    project = memctl("install", "--agent", "gemini", "--extension", "--scope", "project")
    assert project.returncode == 2 and "the user's" in project.stderr
    assert memctl("install", "--extension").returncode == 2  # Gemini CLI's only

    assert memctl("uninstall", "--agent", "gemini").returncode == 0
    assert not folder.exists() and "memd" not in settings_path.read_text()
