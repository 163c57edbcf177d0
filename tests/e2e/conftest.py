"""Fixtures of the end-to-end suite: each agent's pinned CLI, the fakes of their APIs, a user."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Instance

from e2e.fake_api import FakeAnthropic
from e2e.fake_gemini import FakeGemini
from e2e.fake_openai import FakeOpenAI
from e2e.harness import ClaudeCode
from e2e.install_clis import InstallError, install


def _installed(cli: str) -> str:
    """The pinned CLI, installed from npm on first use; a failure to install fails the test."""
    try:
        return install(cli)
    except InstallError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def claude_binary() -> str:
    return _installed("claude")


@pytest.fixture(scope="session")
def codex_binary() -> str:
    return _installed("codex")


@pytest.fixture(scope="session")
def gemini_binary() -> str:
    return _installed("gemini")


@pytest.fixture(scope="session")
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture(scope="session")
def openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="session")
def google() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


def _user(claude_binary: str, api: FakeAnthropic, daemon: Instance, mode: str) -> ClaudeCode:
    root = Path(tempfile.mkdtemp(prefix="cc-", dir=daemon.root))
    return ClaudeCode(claude_binary, api.url, daemon, root, mode)


@pytest.fixture(params=["plugin", "settings"])
def user(request: pytest.FixtureRequest, claude_binary: str, api: FakeAnthropic, daemon: Instance) -> ClaudeCode:
    """A Claude Code user with memd installed both ways a new user would: the plugin, memctl install."""
    return _user(claude_binary, api, daemon, request.param)


@pytest.fixture
def plugin_user(claude_binary: str, api: FakeAnthropic, daemon: Instance) -> ClaudeCode:
    return _user(claude_binary, api, daemon, "plugin")
