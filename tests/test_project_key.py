"""A project's key: its remote, read from real git config files and normalized, credentials
never kept; ``path:<root>`` without one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memd.capture.project import project_key, project_root
from memd.capture.remote import parse_key, remote_key, remote_urls

TOKEN = "ghp_" + "Zq8dK3mV7xT1bN5cR9wE2yU4iO6pA0sL3fG7"
"""The shape of a GitHub token (made up): what must never reach a key."""


def repo(path: Path, config: str) -> Path:
    """A repository at ``path`` whose ``.git/config`` is ``config``."""
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(config)
    return path


def remote(url: str, name: str = "origin") -> str:
    return f'[remote "{name}"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/{name}/*\n'


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/API.git",
        "ssh://git@github.com/Acme/API",
        "https://user:token@github.com/Acme/API.git/",
        "ssh://git@GitHub.COM:2222/Acme/API.git",
        "git+ssh://git@github.com/Acme/API.git",
        "https://github.com:443/Acme//API/",
        "http://github.com/Acme/API.git?ref=main#readme",
        "github.com:Acme/API",
    ],
)
def test_every_way_of_writing_one_remote_is_one_key(url: str) -> None:
    assert remote_key(url, "/home/me/api") == "github.com/Acme/API"


@pytest.mark.parametrize(
    "url",
    [
        f"https://{TOKEN}@github.com/Acme/API.git",
        f"https://x-access-token:{TOKEN}@github.com/Acme/API.git",
        f"https://oauth2:{TOKEN}@github.com/Acme/API",
        f"https://user:p@ss:{TOKEN}@github.com/Acme/API",  # '@' and ':' in the password
        f"user:{TOKEN}@github.com:Acme/API.git",  # scp-like with a password git itself would misread
        f"ssh://git:{TOKEN}@github.com:22/Acme/API",
        f"https://github.com/Acme/API.git?access_token={TOKEN}",
        f"https://github.com/Acme/API.git#{TOKEN}",
    ],
)
def test_credentials_never_reach_the_key(url: str) -> None:
    assert remote_key(url, "/") == "github.com/Acme/API"


@pytest.mark.parametrize(
    "url",
    [
        "",
        f"https://github.com/{TOKEN}/api.git",  # a token pasted into the path: no key rather than a kept token
        "https://github.com/",  # no repository
        "https:///Acme/API",  # no host
        "https://[::1/Acme/API",  # an unclosed IPv6 host
        "https://github.com/Acme/API\n[remote]",  # control characters
        "https://github.com/Acme API",
        "hg::https://example.com/repo",  # a remote helper's address
    ],
)
def test_an_address_that_names_no_repository_gives_no_key(url: str) -> None:
    assert remote_key(url, "/") is None


def test_a_local_remote_is_a_file_key() -> None:
    assert remote_key("/srv/git/api.git", "/home/me/api") == "file:/srv/git/api"
    assert remote_key("file:///srv/git/api.git/", "/home/me/api") == "file:/srv/git/api"
    assert remote_key("../shared/api.git", "/home/me/api") == "file:/home/me/shared/api"


def test_remote_urls_are_read_as_git_reads_its_config() -> None:
    text = (
        "# a comment\n"
        "[core]\n\tbare = false\n"
        '[submodule "lib"]\n\turl = https://example.com/lib.git\n'  # not a remote
        '[url "https://mirror.example.com/"]\n\tinsteadOf = https://example.com/\n'
        '[remote "origin"]\n\tURL = "git@github.com:Acme/API.git" ; the first url is the one fetched\n'
        "\turl = https://elsewhere.example.com/api.git\n"
        '[remote "with \\"quotes\\""] url = https://example.com/a\\\nb.git # continued\n'
        "[Remote.Upstream]\n  url =   https://example.com/up   \n"
        '[remote "flag"]\n\tpushurl = https://example.com/push\n\turl\n'
    )
    assert remote_urls(text) == {
        "origin": "git@github.com:Acme/API.git",
        'with "quotes"': "https://example.com/ab.git",
        "upstream": "https://example.com/up",
    }


def test_the_key_is_origins_else_the_first_remotes(tmp_path: Path) -> None:
    fork = remote("https://example.com/fork.git", "mine")
    both = repo(tmp_path / "both", "[core]\n\tbare = false\n" + fork + remote("git@github.com:Acme/API.git"))
    assert project_key(str(both)) == "github.com/Acme/API"
    upstream = repo(tmp_path / "upstream", remote("https://gitlab.com/Team/Tool.git", "upstream"))
    assert project_key(str(upstream)) == "gitlab.com/Team/Tool"


def test_without_a_remote_the_key_is_the_path(tmp_path: Path) -> None:
    local = repo(tmp_path / "local", "[core]\n\tbare = false\n")
    assert project_key(str(local)) == f"path:{local}"
    plain = tmp_path / "plain"
    (plain).mkdir()
    (plain / "config").write_text(remote("https://github.com/Not/Git.git"))  # a folder's own config file
    assert project_key(str(plain)) == f"path:{plain}"
    assert project_key("/does/not/exist/here") == "path:/does/not/exist/here"
    hostile = repo(tmp_path / "hostile", remote(f"https://github.com/{TOKEN}/x.git"))
    assert project_key(str(hostile)) == f"path:{hostile}"
    unreadable = repo(tmp_path / "unreadable", remote("https://github.com/Acme/API.git"))
    (unreadable / ".git" / "config").chmod(0)
    if not os.access(unreadable / ".git" / "config", os.R_OK):  # root reads anything
        assert project_key(str(unreadable)) == f"path:{unreadable}"


def test_a_linked_worktree_and_a_submodule_read_the_right_config(tmp_path: Path) -> None:
    main = repo(tmp_path / "repo", remote("git@github.com:Acme/API.git"))
    (main / ".git" / "worktrees" / "feature").mkdir(parents=True)
    (main / ".git" / "worktrees" / "feature" / "commondir").write_text("../..\n")
    tree = tmp_path / "repo-feature"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {main}/.git/worktrees/feature\n")
    assert project_root(str(tree)) == str(main.resolve())
    assert project_key(str(tree)) == project_key(str(main)) == "github.com/Acme/API"
    sub = main / "vendor" / "lib"
    sub.mkdir(parents=True)
    (main / ".git" / "modules" / "lib").mkdir(parents=True)
    (main / ".git" / "modules" / "lib" / "config").write_text(remote("https://github.com/Acme/Lib.git"))
    (sub / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    assert project_key(project_root(str(sub))) == "github.com/Acme/Lib"
    bare = tmp_path / "bare.git"
    bare.mkdir()
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    (bare / "config").write_text("[core]\n\tbare = true\n" + remote("git@github.com:Acme/Bare.git"))
    assert project_key(str(bare)) == "github.com/Acme/Bare"


def test_layouts_git_itself_writes(tmp_path: Path) -> None:
    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                       env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"})  # fmt: skip

    main = tmp_path / "main"
    main.mkdir()
    git("init", "-q", "-b", "main", cwd=main)
    git("remote", "add", "origin", f"https://me:{TOKEN}@GitHub.com/Acme/API.git", cwd=main)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x", cwd=main)
    git("worktree", "add", "-q", str(tmp_path / "feature"), cwd=main)
    assert project_key(project_root(str(tmp_path / "feature"))) == "github.com/Acme/API"


def test_keys_people_type() -> None:
    assert parse_key("github.com/Acme/API") == "github.com/Acme/API"
    assert parse_key("GitHub.com/Acme/API.git/") == "github.com/Acme/API"
    assert parse_key(f"https://u:{TOKEN}@github.com/Acme/API.git") == "github.com/Acme/API"
    assert parse_key("git@github.com:Acme/API.git") == "github.com/Acme/API"
    assert parse_key("path:/home/me/notes/") == "path:/home/me/notes"
    assert parse_key("file:/srv/git/api.git") == "file:/srv/git/api"
    for bad in ("notes", "path:notes", f"https://github.com/{TOKEN}", "github.com/"):
        with pytest.raises(ValueError) as refused:
            parse_key(bad)
        assert TOKEN not in str(refused.value)
