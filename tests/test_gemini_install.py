"""memd in Gemini CLI's settings.json: its hooks (where memd is, in their own env) and its MCP server.

The end-to-end proof that Gemini CLI runs what this writes is ``tests/e2e/test_gemini_e2e.py``.
"""

from __future__ import annotations

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
