"""One project across checkouts, through a real daemon: found by the remote, linked by hand
with ``memctl project link``, listed with ``memctl project list``; a credential in a remote
URL never reaches the database."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from conftest import Instance

from memd.protocol import Forget, Forgotten, Ingest, encode_frame
from memd_wire.spool import spool

TOKEN = "ghp_" + "Zq8dK3mV7xT1bN5cR9wE2yU4iO6pA0sL3fG7"


def checkout(path: Path, url: str | None) -> str:
    """A repository at ``path`` whose origin is ``url`` (None: no remote); its path."""
    (path / ".git").mkdir(parents=True)
    config = "[core]\n\tbare = false\n" + (f'[remote "origin"]\n\turl = {url}\n' if url else "")
    (path / ".git" / "config").write_text(config)
    return str(path)


def found(daemon: Instance, query: str, cwd: str) -> set[str]:
    """The prompts a search from ``cwd`` (in its project) finds."""
    return {hit.title.removeprefix("Prompt: ") for hit in daemon.search(query, cwd=cwd).results}


def listed(daemon: Instance) -> list[dict[str, object]]:
    result = daemon.memctl("project", "list", "--json")
    assert result.returncode == 0, result.stderr
    projects: list[dict[str, object]] = json.loads(result.stdout)["projects"]
    return projects


def test_two_checkouts_of_one_repository_are_one_project(daemon: Instance) -> None:
    root = Path(daemon.root)
    first = checkout(root / "laptop" / "api", f"https://me:{TOKEN}@github.com/Acme/API.git")
    second = checkout(root / "desktop" / "src" / "API", "git@github.com:Acme/API.git")
    daemon.remember("the parser retries three times before giving up", first)
    assert "the parser retries three times before giving up" in found(daemon, "parser retries", second)
    daemon.remember("the lexer keeps comments", os.path.join(second, "sub"))
    assert "the lexer keeps comments" in found(daemon, "lexer comments", first)
    [project] = listed(daemon)
    assert project["key"] == "github.com/Acme/API" and project["paths"] == sorted([first, second])
    assert project["events"] == 2 and project["root"] == first
    human = daemon.memctl("project", "list").stdout
    assert "github.com/Acme/API  2 events" in human and f"      {second}" in human
    history = json.loads(daemon.memctl("history", "--project", "Acme/API", "--json").stdout)["events"]
    assert len(history) == 2
    daemon.stop()
    for name in os.listdir(daemon.paths.data_dir):  # the database, its WAL, the vector index...
        path = os.path.join(daemon.paths.data_dir, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                assert TOKEN.encode() not in f.read(), name
    for log in (daemon.paths.log_file, daemon.stderr_file):
        with open(log, "rb") as f:
            assert TOKEN.encode() not in f.read()


def test_link_merges_two_projects_and_search_finds_both(daemon: Instance) -> None:
    root = Path(daemon.root)
    api = checkout(root / "api", "git@github.com:Acme/API.git")
    scratch = checkout(root / "scratch", None)
    daemon.remember("the cache is warmed at startup", api)
    daemon.remember("the cache evicts by size", scratch)
    assert found(daemon, "cache", api) == {"the cache is warmed at startup"}
    linked = daemon.memctl("project", "link", scratch, api, "--json")
    assert linked.returncode == 0, linked.stderr
    reply = json.loads(linked.stdout)
    [api_project, scratch_project] = sorted(p["id"] for p in [reply["project"], {"id": reply["merged"]}])
    assert reply["project"]["id"] == api_project and reply["merged"] == scratch_project and reply["events"] == 1
    assert reply["project"]["paths"] == sorted([api, scratch]) and reply["project"]["key"] == "github.com/Acme/API"
    both = {"the cache is warmed at startup", "the cache evicts by size"}
    assert found(daemon, "cache", api) == found(daemon, "cache", scratch) == both
    assert [p["id"] for p in listed(daemon)] == [api_project]
    again = daemon.memctl("project", "link", api, scratch)
    assert again.returncode == 0 and "merged" not in again.stdout  # one project already
    assert f"{api} is a checkout of project {api_project} (github.com/Acme/API)" in again.stdout


def test_link_to_a_key_and_what_is_refused(daemon: Instance) -> None:
    root = Path(daemon.root)
    notes = checkout(root / "notes", None)
    daemon.remember("the notes index is rebuilt nightly", notes)
    linked = daemon.memctl("project", "link", notes, f"https://me:{TOKEN}@github.com/Me/Notes.git", "--json")
    assert linked.returncode == 0, linked.stderr
    assert json.loads(linked.stdout)["project"]["key"] == "github.com/Me/Notes"  # no project had it: set
    assert TOKEN not in linked.stdout
    clone = checkout(root / "clone", "git@github.com:Me/Notes.git")
    assert found(daemon, "notes index", clone) == {"the notes index is rebuilt nightly"}
    missing = daemon.memctl("project", "link", str(root / "no" / "such" / "dir"), notes)
    assert missing.returncode == 1 and "not a directory, nor a checkout memd knows" in missing.stderr
    not_a_key = daemon.memctl("project", "link", notes, "notes-project")
    assert not_a_key.returncode == 2 and "not a repository key" in not_a_key.stderr
    alone = daemon.memctl("project", "link", notes)
    assert alone.returncode == 2 and "PATH OTHER" in alone.stderr


def test_a_forget_in_one_checkout_takes_the_other_checkouts_spooled_frames(instance: Instance) -> None:
    instance.configure("[daemon]\nspool_drain_interval = 3600.0\n")  # the frames wait for the next start
    instance.start()
    instance.wait_for(lambda: bool(instance.logged("spool_checked_at_start")))  # past the drain at start
    root = Path(instance.root)
    api = checkout(root / "api", "git@github.com:Acme/API.git")
    clone = checkout(root / "clone", "https://github.com/Acme/API")
    other = checkout(root / "other", None)
    instance.remember("the api project exists", api)
    for cwd in (clone, other):
        payload = {"session_id": "s", "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": f"zanzibar {cwd}"}
        frame = Ingest(event="UserPromptSubmit", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())
        spool(instance.paths.spool_dir, encode_frame(frame))
    reply = instance.call(Forget(query="zanzibar", cwd=api), Forgotten)
    assert reply.spooled == 1 and len(instance.spooled()) == 1  # the clone's: it would join this project
    assert instance.stop() == 0
    instance.start()  # drains the spool
    instance.wait_for(lambda: not instance.spooled())
    assert instance.query("SELECT text FROM events WHERE text LIKE 'zanzibar%'") == [(f"zanzibar {other}",)]
