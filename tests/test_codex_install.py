"""memd in Codex CLI's configuration: hooks.json, their trust and the MCP server in config.toml.

The end-to-end proof that Codex runs what this writes is ``tests/e2e/test_codex_e2e.py``;
here, the files' contents, edit by edit.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from conftest import PYTHON, Instance

from memd_client import codex, toml_tables
from memd_client.memctl.claude import hook_command
from memd_wire.launcher import HOOK_SCRIPT

SOURCE = "/home/me/.codex/hooks.json"
HOOK = "/venv/bin/python -I -S /venv/site-packages/memd_client/hook.py {} --agent codex"
SERVER = ("/venv/bin/python", "/venv/site-packages/memd_client/mcp/serve.py")


def install(hooks: dict, config: str) -> tuple[dict, str]:
    return codex.with_memd(SOURCE, hooks, config, HOOK.format, SERVER)


def state(config: str) -> dict[str, str]:
    return {key: entry["trusted_hash"] for key, entry in tomllib.loads(config)["hooks"]["state"].items()}


def test_the_trust_hash_is_codex_s_own() -> None:
    """The hash Codex 0.169.0's ``/hooks`` review recorded for this hook (read back through
    ``codex app-server``'s ``hooks/list``): memd's installer writes the same."""
    group = {"matcher": "startup|resume|clear|compact"}
    handler = {
        "type": "command", "timeout": 10, "statusMessage": "memd: recalling",
        "command": "/work/research/run/bin/hook.py SessionStart json /work/research/run/final/hooks.jsonl",
    }  # fmt: skip
    expected = "sha256:a25e15533a4241a59ff97fcb42215a226af8b7630094f332630dbbb298c361b3"
    assert codex.trust_hash("SessionStart", group, handler) == expected
    assert codex.trust_hash("Stop", group, handler) != codex.trust_hash("Stop", {}, {**handler, "timeout": 11})
    assert codex.trust_hash("Stop", group, handler) == codex.trust_hash("Stop", {}, handler)  # Stop has no matcher


def test_install_trusts_memd_s_hooks_and_keeps_the_user_s_file() -> None:
    config = '# mine\nmodel = "o4"  # the default\n\n[projects."/src/app"]\ntrust_level = "trusted"\n'
    hooks, written = install({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send"}]}]}}, config)
    assert written.startswith(config)  # comments, order and spelling kept
    trusted = state(written)
    assert len(trusted) == len(codex.HOOKS) and f"{SOURCE}:stop:1:0" in trusted  # after the user's Stop hook
    assert trusted[f"{SOURCE}:session_start:0:0"] == codex.trust_hash(
        "SessionStart", hooks["hooks"]["SessionStart"][0], hooks["hooks"]["SessionStart"][0]["hooks"][0]
    )
    server = tomllib.loads(written)["mcp_servers"]["memd"]
    assert server["command"] == SERVER[0] and server["args"] == ["-I", "-S", SERVER[1]]
    assert server["default_tools_approval_mode"] == "approve"  # `codex exec` refuses calls that need approval
    assert server["tools"]["mem_forget"]["approval_mode"] == "prompt"
    assert install(hooks, written) == (hooks, written)  # twice is once, byte for byte


def test_a_user_s_trusted_hook_keeps_its_trust_when_memd_s_come_and_go() -> None:
    """Codex keys trust by position: memd moves the entries of the hooks it moves."""
    hooks, config = install({}, "")
    hooks["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": "echo mine"}]})
    mine = codex.trust_hash("SessionStart", {}, {"type": "command", "command": "echo mine"})
    config += f'\n[hooks.state."{SOURCE}:session_start:1:0"]\ntrusted_hash = "{mine}"\n'
    left, config_left = codex.without_memd(SOURCE, hooks, config)
    assert left == {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}}
    assert state(config_left) == {f"{SOURCE}:session_start:0:0": mine}
    assert "mcp_servers" not in tomllib.loads(config_left)
    again, config_again = install(left, config_left)
    assert state(config_again)[f"{SOURCE}:session_start:0:0"] == mine  # memd's come after the user's
    assert again["hooks"]["SessionStart"][0]["hooks"][0]["command"] == "echo mine"


def test_a_config_that_is_no_toml_is_left_alone() -> None:
    with pytest.raises(toml_tables.TomlError):
        install({}, "model = \n")


def test_tables_are_edited_whole_and_nothing_else() -> None:
    text = '[a]\nx = 1\n[a."b.c"]  # dotted\ny = [\n  "[not.a.header]",\n]\n[[hooks.Stop]]\nz = 2\n'
    dropped = toml_tables.edit(text, lambda path: None if path == ("a", "b.c") else path)
    assert dropped == "[a]\nx = 1\n[[hooks.Stop]]\nz = 2\n"
    renamed = tomllib.loads(toml_tables.edit(text, lambda path: ("q",) if path == ("a",) else path))
    assert renamed == {"q": {"x": 1}, "a": {"b.c": {"y": ["[not.a.header]"]}}, "hooks": {"Stop": [{"z": 2}]}}


def test_memctl_installs_for_codex_and_takes_it_out(instance: Instance, tmp_path: Path) -> None:
    home = tmp_path / "codex"
    env = {**instance.env, "CODEX_HOME": str(home), "HOME": str(tmp_path)}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYTHON, "-m", "memd_client.memctl", *argv], env=env, capture_output=True, text=True)

    dry = run("install", "--agent", "codex", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run" in dry.stdout and not home.exists()
    done = run("--json", "install", "--agent", "codex")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [f["changed"] for f in report["files"]] == [True, True]
    hooks = json.loads((home / "hooks.json").read_text())
    command = hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.endswith(f"{HOOK_SCRIPT} UserPromptSubmit --agent codex")
    source = os.path.realpath(home / "hooks.json")
    assert f"{source}:user_prompt_submit:0:0" in state((home / "config.toml").read_text())
    assert "nothing to change" in run("install", "--agent", "codex").stdout
    checks = {c["name"]: c for c in json.loads(run("--json", "doctor").stdout)["checks"]}
    assert checks["agents"]["level"] == "ok"
    assert checks["hooks"] == {  # a Codex-only user is not told Claude Code sends memd nothing
        "name": "hooks", "level": "ok", "message": "Claude Code: memd is not installed for it (it is for Codex CLI)",
        "fix": "",
    }  # fmt: skip
    out = run("uninstall", "--agent", "codex")
    assert out.returncode == 0, out.stderr
    assert json.loads((home / "hooks.json").read_text()) == {}
    assert tomllib.loads((home / "config.toml").read_text()) == {}


def test_doctor_tells_when_codex_would_skip_memd_s_hooks(tmp_path: Path) -> None:
    from memd_client.doctor.agents import check_agents, gather_agents

    home = tmp_path / ".codex"
    home.mkdir()
    source = os.path.realpath(home / "hooks.json")
    hooks, config = codex.with_memd(source, {}, "", lambda e: hook_command(e, agent="codex"), None)
    (home / "hooks.json").write_text(json.dumps(hooks))
    (home / "config.toml").write_text(config)
    env = {"CODEX_HOME": str(home)}
    (ok,) = check_agents(gather_agents(str(tmp_path), env))
    assert ok.level == "ok" and "Codex CLI" in ok.message
    hooks["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 30  # edited by hand: Codex no longer trusts it
    (home / "hooks.json").write_text(json.dumps(hooks))
    (finding,) = check_agents(gather_agents(str(tmp_path), env))
    assert finding.level == "error" and "Stop" in finding.message and finding.fix == "memctl install --agent codex"
    assert check_agents(gather_agents(str(tmp_path / "nobody"), {"CODEX_HOME": str(tmp_path / "none")})) == []


def test_a_broken_config_is_named_and_left_alone(instance: Instance, tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_text("model = \n")
    env = {**instance.env, "CODEX_HOME": str(home), "HOME": str(tmp_path)}
    argv = [PYTHON, "-m", "memd_client.memctl", "install", "--agent", "codex"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert f"{home / 'config.toml'} is not valid TOML" in done.stderr and "nothing was changed" in done.stderr
    assert (home / "config.toml").read_text() == "model = \n" and not (home / "hooks.json").exists()
