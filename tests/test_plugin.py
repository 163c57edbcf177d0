"""The Claude Code plugin: its files are valid, and every command they name runs, from a
plugin cache path with a space in it, through the launcher, with and without memd."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, PYTHON, Instance

from memd.protocol import HOOK_EVENTS
from memd_client import install
from memd_client.memctl import parser
from memd_wire import launcher

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = os.path.dirname(PYTHON)
SYSTEM_PATH = "/usr/bin:/bin"  # no memctl on it


def load(path: str) -> dict:
    return json.loads((ROOT / path).read_text())


def test_manifest_and_marketplace() -> None:
    manifest = load(".claude-plugin/plugin.json")
    assert re.fullmatch(r"[a-z][a-z0-9-]*", manifest["name"])
    assert manifest["version"] == __import__("memd").__version__
    for key in ("commands", "hooks", "mcpServers"):
        paths = manifest[key] if isinstance(manifest[key], list) else [manifest[key]]
        for path in paths:
            assert path.startswith("./") and (ROOT / path).is_file(), path
    names = {Path(p).stem for p in manifest["commands"]}
    assert names == {"memory-search", "memory-history", "memory-import", "memory-list", "memory-stats", "memory-forget"}
    market = load(".claude-plugin/marketplace.json")
    assert market["owner"]["name"] and market["plugins"][0]["name"] == manifest["name"]
    assert market["plugins"][0]["source"] == "./"


def test_hooks_json_is_what_memctl_install_installs() -> None:
    """One source of truth: the plugin's hooks are ``install.HOOKS`` through the launcher."""
    assert (ROOT / "hooks/hooks.json").read_text() == install.render(install.plugin_hooks())
    hooks = load("hooks/hooks.json")["hooks"]
    for event, groups in hooks.items():
        assert event in HOOK_EVENTS
        (entry,) = groups[0]["hooks"]
        assert entry["command"] == f'sh "${{CLAUDE_PLUGIN_ROOT}}/hooks/memd-launch" hook {event}'
        if event in ("PostToolUse", "PostToolUseFailure"):  # mid-turn: no tool call waits for them
            assert entry["async"] is True
        else:  # claude -p SIGTERMs async hooks as it ends: Stop and the compaction hooks run to the end
            assert "async" not in entry and entry["timeout"] <= 10
    mcp = load(".mcp.json")["mcpServers"]["memd"]
    assert mcp == {"command": "sh", "args": ["${CLAUDE_PLUGIN_ROOT}/hooks/memd-launch", "mcp"]}


def _commands() -> dict[str, tuple[dict[str, str], list[str]]]:
    """Each slash command: its frontmatter, and the shell lines it runs (``!`...` ``)."""
    found = {}
    for path in sorted((ROOT / "hooks/commands").glob("*.md")):
        text = path.read_text()
        head, body = text.removeprefix("---\n").split("\n---\n", 1)
        front = dict(line.split(": ", 1) for line in head.splitlines())
        found[path.stem] = (front, re.findall(r"!`([^`]+)`", body))
    return found


def test_slash_commands_name_real_memctl_commands() -> None:
    subcommands = next(a for a in parser()._actions if a.dest == "command").choices
    for name, (front, lines) in _commands().items():
        assert front["description"] and front["disable-model-invocation"] == "true", name
        assert lines, f"{name} runs nothing"
        for line in lines:
            launcher, rest = line.split(" memctl ", 1)
            assert launcher == 'sh "${CLAUDE_PLUGIN_ROOT}/hooks/memd-launch"'
            assert rest.split()[0] in subcommands, line


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    """The plugin as Claude Code's cache holds it: a copy, under a path with a space."""
    root = tmp_path / "plugin cache" / "memd"
    for part in (".claude-plugin", "hooks"):
        shutil.copytree(ROOT / part, root / part)
    for name in (".mcp.json", "pyproject.toml"):  # the cache holds the whole checkout
        shutil.copy(ROOT / name, root / name)
    return root


def run(command: str, plugin: Path, env: dict[str, str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``command`` as Claude Code runs it: ``sh -c`` with the placeholder substituted."""
    command = command.replace("${CLAUDE_PLUGIN_ROOT}", str(plugin))
    return subprocess.run(
        ["sh", "-c", command], input=stdin, capture_output=True, env={**env, "CLAUDE_PLUGIN_ROOT": str(plugin)},
        timeout=30, cwd=plugin,
    )  # fmt: skip


def test_every_hook_runs_through_the_launcher(daemon: Instance, plugin: Path) -> None:
    env = {**daemon.env, "PATH": SYSTEM_PATH}
    assert daemon.memctl("launcher", "--record").returncode == 0
    hooks = load("hooks/hooks.json")["hooks"]
    for event, groups in hooks.items():
        payload = (FIXTURES / "hooks" / f"hook_{event}.json").read_bytes()
        done = run(groups[0]["hooks"][0]["command"], plugin, env, payload)
        assert done.returncode == 0 and done.stderr == b"", (event, done.stderr)
    stored = {row[0] for row in daemon.query("SELECT event FROM events WHERE event != 'memd'")}
    assert stored == set(hooks)


def test_without_a_record_the_memctl_on_path_writes_one(daemon: Instance, plugin: Path) -> None:
    record = Path(daemon.env["XDG_STATE_HOME"]) / "memd" / "installation"
    record.unlink(missing_ok=True)  # the daemon wrote one when it started
    env = {**daemon.env, "PATH": f"{VENV_BIN}:{SYSTEM_PATH}"}
    payload = (FIXTURES / "hooks" / "hook_UserPromptSubmit.json").read_bytes()
    done = run('sh "${CLAUDE_PLUGIN_ROOT}/hooks/memd-launch" hook UserPromptSubmit', plugin, env, payload)
    assert done.returncode == 0, done.stderr
    fields = dict(line.split("=", 1) for line in record.read_text().splitlines())
    assert os.path.samefile(fields["python"], PYTHON) and fields["hook"] == launcher.HOOK_SCRIPT
    assert fields["guard"] == " ".join(launcher.signal_guard())
    assert daemon.query("SELECT count(*) FROM events WHERE event = 'UserPromptSubmit'") == [(1,)]


def test_the_launcher_starts_the_hook_client_with_sigterm_held(tmp_path: Path, plugin: Path) -> None:
    """Ignored from the launcher's first line, blocked from the record's guard on: a SIGTERM
    that comes before the client has its handler waits for it (test_hook_signals.py)."""
    state = tmp_path / "state"
    (state / "memd").mkdir(parents=True)
    python = tmp_path / "python"  # stands in for the interpreter: shows how it was started
    python.write_text(f"#!{PYTHON}\nprint(''.join(line for line in open('/proc/self/status') if 'Sig' in line))\n")
    python.chmod(0o755)
    record = launcher.render(str(python), launcher.HOOK_SCRIPT, launcher.signal_guard())
    (state / "memd" / "installation").write_text(record)
    env = {"PATH": SYSTEM_PATH, "HOME": str(tmp_path), "XDG_STATE_HOME": str(state)}
    done = run('sh "${CLAUDE_PLUGIN_ROOT}/hooks/memd-launch" hook PostToolUse', plugin, env, b"{}\n")
    masks = {key: int(value, 16) for key, value in re.findall(r"^(Sig\w+):\s+([0-9a-f]+)$", done.stdout.decode(), re.M)}
    term, hup = 1 << (15 - 1), 1 << (1 - 1)
    assert masks["SigBlk"] & term and masks["SigBlk"] & hup and masks["SigIgn"] & term, done


def test_without_memd_a_session_gets_one_line(instance: Instance, plugin: Path) -> None:
    env = {**instance.env, "PATH": SYSTEM_PATH}
    start = run('sh "${CLAUDE_PLUGIN_ROOT}/hooks/memd-launch" hook SessionStart', plugin, env, b"{}\n")
    assert start.returncode == 0
    message = json.loads(start.stdout)["systemMessage"]
    assert "not installed" in message and f"(pipx install '{plugin.resolve()}')" in message  # the model included
    tool = run('sh "${CLAUDE_PLUGIN_ROOT}/hooks/memd-launch" hook PostToolUse', plugin, env, b"{}\n")
    assert (tool.returncode, tool.stdout, tool.stderr) == (0, b"", b"")
    mcp = run('sh "${CLAUDE_PLUGIN_ROOT}/hooks/memd-launch" mcp', plugin, env)
    assert mcp.returncode == 1 and b"not installed" in mcp.stderr
    # A record naming an interpreter that is gone (a deleted virtualenv) is the same case.
    state = Path(instance.env["XDG_STATE_HOME"]) / "memd"
    state.mkdir(parents=True)
    (state / "installation").write_text("python=/nonexistent/bin/python\nhook=/nonexistent/hook.py\n")
    again = run('sh "${CLAUDE_PLUGIN_ROOT}/hooks/memd-launch" hook SessionStart', plugin, env, b"{}\n")
    assert again.returncode == 0 and "systemMessage" in json.loads(again.stdout)


def test_slash_commands_and_mcp_server_run(daemon: Instance, plugin: Path) -> None:
    home = Path(daemon.root) / "home"
    shutil.copytree(FIXTURES / "transcripts", home / ".claude" / "projects")
    env = {**daemon.env, "PATH": SYSTEM_PATH, "HOME": str(home)}
    assert daemon.memctl("launcher", "--record").returncode == 0
    cwd = f"{daemon.root}/proj"
    event_id = daemon.remember("The kite festival is in April", cwd)
    arguments = {"memory-search": "kite festival", "memory-forget": str(event_id), "memory-import": "--all"}
    for name, (_, lines) in _commands().items():
        for line in lines:
            done = run(line.replace("$ARGUMENTS", arguments.get(name, "")), plugin, env)
            assert done.returncode == 0, (name, done.stderr)
    assert daemon.query("SELECT count(*) FROM events WHERE id = ?", event_id) == [(1,)]  # --dry-run only
    mcp = load(".mcp.json")["mcpServers"]["memd"]
    command = " ".join([mcp["command"], *(f'"{a}"' for a in mcp["args"])])
    request = (FIXTURES / "mcp" / "initialize_request_from_claude_code.json").read_bytes()
    served = run(command, plugin, env, request)
    assert served.returncode == 0
    assert json.loads(served.stdout)["result"]["serverInfo"]["name"] == "memd"
