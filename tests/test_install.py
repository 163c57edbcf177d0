"""memctl install / uninstall against a temporary HOME: merged, idempotent, reversible,
and a malformed settings.json refused untouched."""

from __future__ import annotations

import glob
import json
import os
import shlex
import subprocess

from conftest import Instance, hook_fixtures

from memd_client.install import HOOKS, MCP_SCRIPT, is_memd

THEIRS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "someFutureKey": {"nested": [1, 2, 3]},
    "hooks": {
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}],
    },
}


def settings_file(instance: Instance, content: str | None) -> str:
    home = f"{instance.root}/home"
    os.makedirs(f"{home}/.claude", exist_ok=True)
    instance.env["HOME"] = home
    path = f"{home}/.claude/settings.json"
    if content is not None:
        with open(path, "w") as f:
            f.write(content)
    return path


def load(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def memd_entries(settings: dict) -> dict[str, list[dict]]:
    return {
        event: [h for group in groups for h in group["hooks"] if is_memd(h)]
        for event, groups in settings.get("hooks", {}).items()
    }


def test_install_merges_is_idempotent_and_uninstall_restores(instance: Instance) -> None:
    original = json.dumps(THEIRS, indent=4)
    path = settings_file(instance, original)
    installed = instance.memctl("install")
    assert installed.returncode == 0, installed.stderr
    assert "the previous version is in" in installed.stdout
    (backup,) = glob.glob(f"{path}.memd-backup-*")
    with open(backup) as f:
        assert f.read() == original
    after = load(path)
    entries = memd_entries(after)
    assert {event for event, hooks in entries.items() if hooks} == set(HOOKS)
    assert all(len(hooks) == 1 for event, hooks in entries.items() if event in HOOKS)
    assert entries["PostToolUse"][0]["async"] is True and entries["UserPromptSubmit"][0]["timeout"] == 10
    assert "async" not in entries["Stop"][0] and entries["Stop"][0]["timeout"] == 10
    assert after["hooks"]["PostToolUse"][0] == THEIRS["hooks"]["PostToolUse"][0]  # theirs first, untouched
    assert after["hooks"]["Notification"] == THEIRS["hooks"]["Notification"]
    assert {k: v for k, v in after.items() if k != "hooks"} == {k: v for k, v in THEIRS.items() if k != "hooks"}
    argv = shlex.split(entries["SessionStart"][0]["command"])
    assert argv[:2] == ["/usr/bin/env", "--block-signal=TERM,HUP,INT"]  # the signal guard (test_hook_signals.py)
    assert argv[2].startswith("/") and argv[3:5] == ["-I", "-S"] and argv[-1] == "SessionStart"

    with open(path, "rb") as f:
        once = f.read()
    again = instance.memctl("install")
    assert again.returncode == 0 and "nothing to do" in again.stdout
    with open(path, "rb") as f:
        assert f.read() == once  # twice is once, byte for byte

    removed = instance.memctl("uninstall")
    assert removed.returncode == 0, removed.stderr
    assert load(path) == THEIRS  # the same settings; the formatting is memctl's (2-space JSON)
    assert "nothing to do" in instance.memctl("uninstall").stdout


def test_an_installed_hook_command_runs(instance: Instance) -> None:
    path = settings_file(instance, None)  # no settings yet: created
    instance.start()
    assert instance.memctl("install").returncode == 0
    (entry,) = memd_entries(load(path))["PostToolUse"]
    (fixture,) = [p for p in hook_fixtures() if p.name == "hook_PostToolUse.json"]
    ran = subprocess.run(entry["command"], shell=True, input=fixture.read_bytes(), env=instance.env, timeout=30)
    assert ran.returncode == 0
    assert instance.status().events == 1
    assert instance.memctl("uninstall").returncode == 0
    assert load(path) == {}
    instance.stop()


def test_dry_run_shows_the_diff_and_writes_nothing(instance: Instance) -> None:
    original = json.dumps(THEIRS)
    path = settings_file(instance, original)
    shown = instance.memctl("install", "--dry-run")
    assert shown.returncode == 0
    assert shown.stdout.startswith(f"--- {path}") and f"+++ {path} (new)" in shown.stdout and "hook.py" in shown.stdout
    assert "dry run" in shown.stdout
    with open(path) as f:
        assert f.read() == original
    assert glob.glob(f"{path}.memd-backup-*") == []


def test_malformed_settings_are_refused_untouched(instance: Instance) -> None:
    for content, why in (
        ('{"hooks": {"Stop": [', "is not valid JSON (line 1"),
        ("[1, 2]", "holds a JSON list, not an object"),
        ('{"hooks": "yes"}', '"hooks" is a str, not an object'),
    ):
        path = settings_file(instance, content)
        result = instance.memctl("install")
        assert result.returncode == 1
        assert why in result.stderr and "nothing was changed" in result.stderr, result.stderr
        with open(path) as f:
            assert f.read() == content
        assert glob.glob(f"{path}.memd-backup-*") == []


def test_project_scope_and_an_explicit_file(instance: Instance) -> None:
    explicit = f"{instance.root}/elsewhere/settings.local.json"
    assert instance.memctl("install", "--settings", explicit).returncode == 0
    assert set(memd_entries(load(explicit))) == set(HOOKS)
    project = f"{instance.root}/proj"
    os.makedirs(project)
    result = subprocess.run(
        [*instance.memctl_argv(), "install", "--scope", "project"], cwd=project, env=instance.env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert set(memd_entries(load(f"{project}/.claude/settings.json"))) == set(HOOKS)


def test_a_stale_entry_from_a_moved_virtualenv_is_replaced() -> None:
    from memd_client.install import merged, without

    stale = "/old/venv/bin/python3 -I -S /old/venv/lib/python3.11/site-packages/memd_client/hook.py Stop"
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": stale, "async": True}]}]}}
    fresh = merged(settings, lambda event: f"/new/python -I -S /new/memd_client/hook.py {event}")
    (entry,) = memd_entries(fresh)["Stop"]
    assert entry["command"] == "/new/python -I -S /new/memd_client/hook.py Stop"
    assert without(fresh) == {} and without(settings) == {}
    assert without({"hooks": {}}) == {"hooks": {}}  # an empty object of the user's own stays


CLAUDE_JSON = {
    "numStartups": 42,
    "projects": {"/home/you/app": {"allowedTools": []}},
    "mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}},
}


def test_mcp_install_registers_the_server_and_uninstall_restores(instance: Instance) -> None:
    settings_file(instance, None)
    path = f"{instance.env['HOME']}/.claude.json"
    original = json.dumps(CLAUDE_JSON, indent=2) + "\n"
    with open(path, "w") as f:
        f.write(original)
    dry = instance.memctl("mcp", "install", "--dry-run")
    assert dry.returncode == 0 and '+    "memd": {' in dry.stdout and load(path) == CLAUDE_JSON
    done = instance.memctl("mcp", "install", "--claude-code")
    assert done.returncode == 0, done.stderr
    (backup,) = glob.glob(f"{path}.memd-backup-*")
    with open(backup) as f:
        assert f.read() == original
    config = load(path)
    entry = config["mcpServers"]["memd"]
    assert os.path.isabs(entry["command"]) and entry["args"] == ["-I", "-S", MCP_SCRIPT]
    assert {k: v for k, v in config.items() if k != "mcpServers"} == {
        k: v for k, v in CLAUDE_JSON.items() if k != "mcpServers"
    }
    assert config["mcpServers"]["github"] == CLAUDE_JSON["mcpServers"]["github"]
    # The registered command really serves MCP.
    served = subprocess.run(
        [entry["command"], *entry["args"]],
        input=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}\n',
        capture_output=True, env=instance.env, timeout=30,
    )  # fmt: skip
    assert json.loads(served.stdout)["result"]["serverInfo"]["name"] == "memd"
    again = instance.memctl("mcp", "install")
    assert "already" in again.stdout and load(path) == config
    removed = instance.memctl("mcp", "uninstall")
    assert removed.returncode == 0 and load(path) == CLAUDE_JSON
    with open(path) as f:
        assert f.read() == original  # 2-space JSON like Claude Code's own: byte for byte


def test_mcp_install_for_claude_desktop(instance: Instance) -> None:
    settings_file(instance, None)
    instance.env["XDG_CONFIG_HOME"] = f"{instance.root}/config"
    done = instance.memctl("mcp", "install", "--claude-desktop")
    assert done.returncode == 0 and "Claude Desktop" in done.stdout
    path = f"{instance.root}/config/Claude/claude_desktop_config.json"
    assert set(load(path)["mcpServers"]) == {"memd"}
    assert instance.memctl("mcp", "uninstall", "--claude-desktop").returncode == 0
    assert load(path) == {}


def test_mcp_install_refuses_a_malformed_config(instance: Instance) -> None:
    settings_file(instance, None)
    path = f"{instance.env['HOME']}/.claude.json"
    for text in ('{"mcpServers": [1]}', "{not json"):
        with open(path, "w") as f:
            f.write(text)
        refused = instance.memctl("mcp", "install")
        assert refused.returncode == 1 and "nothing was changed" in refused.stderr
        with open(path) as f:
            assert f.read() == text
    assert glob.glob(f"{path}.memd-backup-*") == []
