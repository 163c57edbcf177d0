"""Every client resolves an instance's files the same way, from the XDG variables."""

from __future__ import annotations

from memd_wire.paths import resolve


def test_xdg_layout() -> None:
    env = {
        "HOME": "/h",
        "XDG_RUNTIME_DIR": "/r",
        "XDG_DATA_HOME": "/d",
        "XDG_STATE_HOME": "/s",
        "XDG_CONFIG_HOME": "/c",
    }
    p = resolve(env=env)
    assert p.socket == "/r/memd/memd.sock"
    assert p.database == "/d/memd/memd.sqlite3"
    assert p.spool_dir == "/s/memd/spool"
    assert p.log_file == "/s/memd/memd.log"
    assert p.config_file == "/c/memd/config.toml"
    assert p.owns_runtime_dir


def test_fallbacks_without_xdg_and_relative_values_ignored() -> None:
    p = resolve(env={"HOME": "/h", "XDG_DATA_HOME": "relative/not/allowed"})
    assert p.socket == "/h/.local/state/memd/run/memd.sock"
    assert p.data_dir == "/h/.local/share/memd"
    assert p.state_dir == "/h/.local/state/memd"
    assert p.config_file == "/h/.config/memd/config.toml"


def test_env_overrides_then_flags_win() -> None:
    env = {"HOME": "/h", "MEMD_SOCKET": "/tmp/x.sock", "MEMD_DATA_DIR": "/tmp/data"}
    p = resolve(env=env)
    assert (p.socket, p.data_dir, p.owns_runtime_dir) == ("/tmp/x.sock", "/tmp/data", False)
    p = resolve(socket="/f/s.sock", data_dir="/f/d", env=env)
    assert (p.socket, p.data_dir) == ("/f/s.sock", "/f/d")
