"""Team search on the sync server (issue 31): a teammate searches the team's shared memory where
it is, on PostgreSQL, without holding it; words on Debian's PostgreSQL (no pgvector), words and
meaning on a PostgreSQL with pgvector (``tests/pg.py``: ``pgvector_bindir``).  Real servers,
real daemons, memctl."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Instance
from machines import PASSWORD, Machine, machines_of, repository, wait_until
from pg import PgDatabase, PgServer

from memd.protocol import TeamResults, TeamSearch
from memd.store.remote import SCHEMA, VECTORS, WORDS_INDEX

TEAM = "memd_team_acme"
PROJECT = "github.com/acme/api"


@pytest.fixture
def team_world(pg: PgDatabase) -> Iterator[tuple[PgDatabase, str, list[Machine]]]:
    yield from _world(pg, vectors=False)


@pytest.fixture
def vector_world(pgvector_server: PgServer) -> Iterator[tuple[PgDatabase, str, list[Machine]]]:
    database = PgDatabase(pgvector_server)
    try:
        yield from _world(database, vectors=True)
    finally:
        database.drop()


def _world(pg: PgDatabase, *, vectors: bool) -> Iterator[tuple[PgDatabase, str, list[Machine]]]:
    """memd's schema (with pgvector's part where asked: a superuser's, as on a real server),
    alice and bob in the team, carol not."""
    for role in ("alice", "bob", "carol", TEAM):
        pg.create_role(role, PASSWORD)
    pg.sql(f"GRANT {TEAM} TO alice, bob")
    pg.sql(SCHEMA)
    if vectors:  # and the words index usable, as a superuser's `memctl sync setup` makes them
        pg.sql(VECTORS)
        pg.sql(WORDS_INDEX)
    with machines_of("memd-t-") as (root, machines):
        yield pg, root, machines


def team_search(machine: Machine, query: str, cwd: str | None = None, **options: object) -> TeamResults:
    request = TeamSearch(query=query, cwd=cwd, all_projects=cwd is None, **options)  # type: ignore[arg-type]
    return machine.instance.call(request, TeamResults)


def test_a_teammate_searches_the_team_memory_on_the_server_without_holding_it(team_world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pg, root, machines = team_world
    alice = Machine(
        root, "alice", pg.dsn("alice", PASSWORD), teams={PROJECT: TEAM}, privacy="secrets = false"
    )  # her own store keeps secrets: the server must not
    bob = Machine(root, "bob", pg.dsn("bob", PASSWORD), sync="pull_teams = false")
    carol = Machine(root, "carol", pg.dsn("carol", PASSWORD))
    machines += [alice, bob, carol]
    shared = repository(tmp_path / "alice" / "api", "git@github.com:acme/api.git")
    private = repository(tmp_path / "alice" / "notes", "git@github.com:alice/notes.git")
    bobs = repository(tmp_path / "bob" / "api", "https://github.com/acme/api")
    alice.hook_prompt(shared, "the quokka migrations must run before the api deploy")
    alice.hook_prompt(shared, "rotate the quokka token ghp_R8cK2mZq9LwX4vN7tB1yH6jP3sD5fG0aE2uI")
    alice.hook_prompt(private, "the quokka notes are personal and never shared")
    wait_until(lambda: len(team_search(bob, "quokka").results) == 2, "alice's two shared prompts on the server", bob)

    found = team_search(bob, "quokka migration", cwd=bobs)  # stemmed: "migration" finds "migrations"
    assert found.scope == PROJECT and found.mode == "keyword" and "pgvector" in found.notice
    assert "reads every team row" in found.notice and "LEAKPROOF" in found.notice
    (hit,) = [h for h in found.results if "deploy" in h.title]
    (mine,) = [h for h in alice.instance.search("quokka migrations", cwd=shared).results if "deploy" in h.title]
    assert hit.cite == mine.cite and (hit.shared_by, hit.team, hit.here) == ("alice", TEAM, False)
    assert not bob.instance.query("SELECT 1 FROM events WHERE text LIKE '%quokka%'")  # not on bob's machine
    token = team_search(bob, "rotate token").results
    assert token and "ghp_" not in token[0].title + token[0].snippet and "[REDACTED:" in token[0].snippet
    assert all("personal" not in h.title for h in team_search(bob, "quokka notes").results)
    assert team_search(carol, "quokka").results == []  # not in the team: the server shows carol nothing

    shown = bob.instance.memctl("search", "--team", "quokka deploy", cwd=bobs)
    assert shown.returncode == 0, shown.stderr
    assert f"[mem:{hit.cite}]" in shown.stdout and "shared by alice" in shown.stdout and "server only" in shown.stdout
    as_json = json.loads(bob.instance.memctl("search", "--team-role", TEAM, "quokka", "--json", cwd=bobs).stdout)
    assert {h["cite"] for h in as_json["results"]} >= {hit.cite}
    refused = bob.instance.memctl("search", "--team", "--kind", "prompt", "quokka")
    assert refused.returncode != 0 and "--kind" in refused.stderr

    assert alice.instance.memctl("forget", mine.cite, "--yes").returncode == 0  # forgotten: gone from the server
    wait_until(lambda: all("deploy" not in h.title for h in team_search(bob, "quokka").results), "the forget", bob)


def test_pulling_teams_again_brings_what_was_left_on_the_server(team_world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``pull_teams = false`` moves the cursor past the team's rows; turned back on, the pull
    starts over, so the cursor never stays past a row this machine did not apply.  Off again,
    the team's forgets still come: a teammate's forgotten memory leaves every machine."""
    pg, root, machines = team_world
    alice = Machine(root, "alice", pg.dsn("alice", PASSWORD), teams={PROJECT: TEAM})
    bob = Machine(root, "bob", pg.dsn("bob", PASSWORD), sync="pull_teams = false")
    machines += [alice, bob]
    alice.hook_prompt(repository(tmp_path / "a" / "api", "git@github.com:acme/api.git"), "the wombat cache is sharded")
    bobs = repository(tmp_path / "b" / "api", "https://github.com/acme/api")
    wait_until(lambda: bool(team_search(bob, "wombat").results), "the team row on the server", bob)
    wait_until(lambda: bob.instance.status().sync.last_pull is not None, "bob's pull past it", bob)  # type: ignore[union-attr]
    assert not bob.finds(bobs, "wombat")
    bob.stop()
    config = Path(bob.instance.paths.config_file)
    config.write_text(config.read_text().replace("pull_teams = false", "pull_teams = true"))
    bob.instance.start()
    wait_until(lambda: bob.finds(bobs, "wombat"), "the team memory pulled after all", bob)
    (hit,) = team_search(bob, "wombat").results
    assert hit.here

    bob.stop()  # and off again: what was pulled stays, and its owner's forget still reaches it
    config.write_text(config.read_text().replace("pull_teams = true", "pull_teams = false"))
    bob.instance.start()
    assert alice.instance.memctl("forget", hit.cite, "--yes").returncode == 0
    wait_until(lambda: not bob.finds(bobs, "wombat"), "alice's forget on bob's machine", bob)


def test_team_search_by_meaning_where_the_server_has_pgvector(vector_world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pg, root, machines = vector_world
    alice = Machine(root, "alice", pg.dsn("alice", PASSWORD), teams={PROJECT: TEAM}, embedding=True)
    bob = Machine(root, "bob", pg.dsn("bob", PASSWORD), sync="pull_teams = false", embedding=True)
    machines += [alice, bob]
    shared = repository(tmp_path / "alice" / "api", "git@github.com:acme/api.git")
    alice.instance.wait_embedded()  # the model is loaded: the push carries vectors
    alice.hook_prompt(shared, "every production release needs a manual approval from the on-call lead")
    alice.hook_prompt(shared, "the css grid collapses on narrow screens below 600px")
    wait_until(lambda: pg.sql("SELECT count(*) FROM memd.log WHERE embedding IS NOT NULL")[0][0] == 2, "vectors", alice)
    bob.instance.wait_embedded()
    found = team_search(bob, "who has to sign off before we ship")  # no word in common with the first
    assert found.mode == "hybrid" and found.notice == "", found.notice
    assert found.results and "approval" in found.results[0].title, [h.title for h in found.results]
    assert found.results[0].similarity is not None and found.results[0].similarity > 0.2


def test_sync_setup_by_a_superuser_makes_team_search_indexed_and_hybrid(
    pgvector_server: PgServer, tmp_path: Path
) -> None:
    """`memctl sync setup` as a superuser: the schema, pgvector's part and the words index usable
    under row-level security, each said; as a member who is none, what to ask a superuser for."""
    database = PgDatabase(pgvector_server)
    try:
        database.create_role("dba", PASSWORD)
        database.sql("ALTER ROLE dba SUPERUSER")
        database.create_role("erin", PASSWORD)
        admin = Instance(str(tmp_path / "dba"))
        done = admin.memctl("sync", "setup", database.server.dsn("dba", PASSWORD, database.name))
        assert done.returncode == 0, done.stderr
        assert "matches words and meaning" in done.stdout and "reads every team row" not in done.stdout
        leakproof = (
            "SELECT proleakproof FROM pg_proc WHERE oid = 'pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure"
        )
        assert database.sql(leakproof) == [(True,)]
        assert database.sql("SELECT count(*) FROM pg_attribute WHERE attname = 'embedding'"
                            " AND attrelid = 'memd.log'::regclass") == [(1,)]  # fmt: skip
        database.sql("ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF")
        member = Instance(str(tmp_path / "erin"))
        joined = member.memctl("sync", "setup", database.server.dsn("erin", PASSWORD, database.name))
        assert joined.returncode == 0, joined.stderr
        assert "reads every team row until a superuser runs `ALTER FUNCTION" in joined.stdout, joined.stdout
    finally:
        database.drop()
