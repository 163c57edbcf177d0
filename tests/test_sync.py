"""Sync through a real PostgreSQL server (issue 20): two daemons with their own data dirs,
one server started by the tests (``tests/pg.py``), the real hook client and memctl."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import Instance
from machines import PASSWORD, Machine, machines_of, repository, wait_until
from pg import PgDatabase

from memd.protocol import Ingest, Ingested
from memd.services.sync import MACHINE_FILE, machine_id
from memd.store.remote import SCHEMA


@pytest.fixture
def world(pg: PgDatabase) -> Iterator[tuple[PgDatabase, str, list[Machine]]]:
    """A fresh database with memd's schema and alice's role; the machines the test starts are stopped after."""
    pg.create_role("alice", PASSWORD)
    pg.sql(SCHEMA)
    with machines_of("memd-s-") as (root, machines):
        yield pg, root, machines


def test_an_event_captured_on_one_machine_is_found_on_another(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pg, root, machines = world
    url = pg.dsn("alice", PASSWORD)
    a = Machine(root, "a", url)
    b = Machine(root, "b", url)
    machines += [a, b]
    here = repository(tmp_path / "laptop" / "api", "git@github.com:acme/api.git")
    there = repository(tmp_path / "desktop" / "code" / "api", "https://github.com/acme/api")
    a.hook_prompt(here, "why does the zanzibar importer drop the last row")
    deadline = time.monotonic() + 30
    while not b.finds(there, "zanzibar"):
        assert time.monotonic() < deadline, b.instance.stderr()[-2000:]
        time.sleep(0.1)
    report = b.instance.status().sync
    assert report is not None and report.pulled >= 1 and report.state == "syncing"


def test_a_citation_copied_on_one_machine_opens_the_same_memory_on_another(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Each machine numbers its rows in the order they arrived there; a ``mem:`` id comes
    from the event's key, so it names one memory on both."""
    pg, root, machines = world
    url = pg.dsn("alice", PASSWORD)
    a = Machine(root, "a", url)
    b = Machine(root, "b", url)
    machines += [a, b]
    here = repository(tmp_path / "a" / "api", "git@github.com:acme/api.git")
    there = repository(tmp_path / "b" / "api", "git@github.com:acme/api.git")
    for n in range(15):  # interleaved, so that row numbers differ between the machines
        a.hook_prompt(here, f"alpha note {n} about the ledger")
        b.hook_prompt(there, f"beta note {n} about the ledger")

    def texts(machine: Machine) -> dict[str, str]:
        rows = machine.instance.query("SELECT c.cite, e.text FROM events e JOIN citations c ON c.event_id = e.id")
        return {cite: text for cite, text in rows if "note" in text}

    wait_until(lambda: len(texts(a)) == len(texts(b)) == 30, "both machines holding all 30 prompts", b)
    assert texts(a) == texts(b)
    for cite, text in list(texts(a).items())[::5]:
        for machine in (a, b):
            shown = machine.instance.memctl("show", f"mem:{cite}", "--json")
            assert shown.returncode == 0 and json.loads(shown.stdout)["details"][0]["text"] == text, shown.stderr


def test_machines_that_share_a_host_name_or_a_copied_data_dir_still_converge(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Containers, cloned VMs and CI runners share a host name: each data dir has its own
    random id, so each applies the other's rows.  A data dir copied whole shares the id too:
    its rows are applied all the same (the cursor never passes a row not applied), and both
    daemons say that another one claims their id."""
    pg, root, machines = world
    url = pg.dsn("alice", PASSWORD)
    a = Machine(root, "a", url, label="runner")
    b = Machine(root, "b", url, label="runner")
    machines += [a, b]
    here = repository(tmp_path / "a" / "api", "git@github.com:acme/api.git")
    there = repository(tmp_path / "b" / "api", "git@github.com:acme/api.git")
    a.hook_prompt(here, "the quokka migration needs a lock timeout")
    b.hook_prompt(there, "the wombat cache evicts by size")
    wait_until(lambda: b.finds(there, "quokka"), "a's memory on b", b)
    wait_until(lambda: a.finds(here, "wombat"), "b's memory on a", a)
    ids = {m.instance.status().sync.machine for m in (a, b)}  # type: ignore[union-attr]
    assert len(ids) == 2 and all(label.startswith("runner (m-") for label in ids), ids
    assert all(m.instance.status().sync.shared_id_seen is None for m in (a, b))  # type: ignore[union-attr]

    clone = Machine(root, "clone", url, label="runner", copy_of=a)
    machines.append(clone)
    elsewhere = repository(tmp_path / "clone" / "api", "git@github.com:acme/api.git")
    clone.hook_prompt(elsewhere, "the platypus job runs at night")
    wait_until(lambda: a.finds(here, "platypus"), "the clone's memory on a, under a's own id", a)
    wait_until(lambda: clone.finds(elsewhere, "quokka"), "a's memory on the clone", clone)
    wait_until(lambda: a.instance.status().sync.shared_id_seen is not None, "a noticing its id is shared", a)  # type: ignore[union-attr]
    doctor = a.instance.memctl("doctor")
    assert "another machine" in doctor.stdout and MACHINE_FILE in doctor.stdout, doctor.stdout


def test_a_teammate_joins_with_memctl_sync_setup_alone(pg: PgDatabase) -> None:
    """The owner sets the server up; a teammate's ``memctl sync setup`` joins the schema the
    owner made (no CREATE needed), writes the config, says which of its teams it is not yet a
    member of, and the teammate's daemon syncs."""
    pg.create_role("alice", PASSWORD)
    pg.create_role("bob", PASSWORD)
    pg.sql(f"GRANT CREATE ON DATABASE {pg.name} TO alice")
    root = tempfile.mkdtemp(prefix="memd-j-", dir="/tmp")
    alice, bob = Instance(os.path.join(root, "alice")), Instance(os.path.join(root, "bob"))
    try:
        made = alice.memctl("sync", "setup", pg.dsn("alice", PASSWORD))
        assert made.returncode == 0 and "schema is ready" in made.stdout, made.stderr
        bob.configure('[sync.teams]\n"github.com/acme/api" = "memd_team_acme"\n')
        joined = bob.memctl("sync", "setup", pg.dsn("bob", PASSWORD))
        assert joined.returncode == 0, joined.stderr
        assert "joined memd's schema" in joined.stdout and "not a member of memd_team_acme" in joined.stdout
        written = Path(bob.paths.config_file).read_text()
        assert "url = " in written and PASSWORD not in written
        bob.env["PGPASSWORD"] = PASSWORD
        bob.start()
        deadline = time.monotonic() + 60
        while (report := bob.status().sync) is None or report.state != "syncing":
            assert time.monotonic() < deadline, bob.stderr()[-2000:]
            time.sleep(0.1)
    finally:
        for instance in (alice, bob):
            if instance.process is not None and instance.process.poll() is None:
                instance.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_sync_setup_says_when_the_server_is_not_reached(tmp_path: Path) -> None:
    """Not reached is not "ask an admin": the user is told to check the URL, the server, the password."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = Instance(str(tmp_path / "x")).memctl("sync", "setup", f"postgresql://alice@127.0.0.1:{port}/memd")
    assert done.returncode == 1 and "cannot reach alice@127.0.0.1" in done.stderr, done.stderr
    assert "admin" not in done.stderr


def test_an_error_is_reported_by_its_cause_not_the_task_group_it_came_through() -> None:
    from memd.services.errors import problem

    nested = ExceptionGroup("unhandled errors in a TaskGroup", [OSError("server closed the connection")])
    assert problem(ExceptionGroup("outer", [nested])) == "OSError: server closed the connection"


def test_a_machine_id_is_made_once_and_kept(tmp_path: Path) -> None:
    made = machine_id(str(tmp_path))
    assert made == machine_id(str(tmp_path)) and made.startswith("m-")
    assert os.stat(tmp_path / MACHINE_FILE).st_mode & 0o777 == 0o600
    (tmp_path / MACHINE_FILE).write_text("garbage\n")
    again = machine_id(str(tmp_path))
    assert again != made and again == machine_id(str(tmp_path))


def test_a_forget_on_one_machine_removes_the_memory_from_the_other_down_to_the_bytes(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pg, root, machines = world
    url = pg.dsn("alice", PASSWORD)
    a, b = Machine(root, "a", url), Machine(root, "b", url)
    machines += [a, b]
    here = repository(tmp_path / "a" / "api", "git@github.com:acme/api.git")
    there = repository(tmp_path / "b" / "api", "git@github.com:acme/api.git")
    a.hook_prompt(here, "the capybara deploy step needs the staging token first")
    wait_until(lambda: b.finds(there, "capybara"), "the memory on b", b)
    (hit,) = a.instance.search("capybara", cwd=here).results
    done = a.instance.memctl("forget", hit.cite, "--yes")
    assert done.returncode == 0, done.stderr
    wait_until(lambda: not b.finds(there, "capybara"), "the forget on b", b)
    wait_until(lambda: b.instance.status().sync.tombstones == 0, "b's tombstones", b)  # type: ignore[union-attr]
    assert pg.sql("SELECT count(*) FROM memd.log WHERE op = 'put'") == [(0,)]  # gone from the server too
    for machine in (a, b):
        machine.stop()
        for name in os.listdir(os.path.dirname(machine.instance.paths.database)):
            if name.startswith(os.path.basename(machine.instance.paths.database)):
                data = Path(os.path.dirname(machine.instance.paths.database), name).read_bytes()
                assert b"capybara" not in data, name


def test_a_forget_travels_as_fast_as_an_event(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """With rounds 60 s apart, an event and a forget both wake the sync: each reaches the
    other machine in about the time a push and a NOTIFY take, not at the next round."""
    pg, root, machines = world
    url = pg.dsn("alice", PASSWORD)
    a, b = Machine(root, "a", url, interval=60), Machine(root, "b", url, interval=60)
    machines += [a, b]
    here = repository(tmp_path / "a" / "api", "git@github.com:acme/api.git")
    there = repository(tmp_path / "b" / "api", "git@github.com:acme/api.git")
    wait_until(lambda: all(m.instance.status().sync.state == "syncing" for m in (a, b)), "both connected", a)  # type: ignore[union-attr]
    a.hook_prompt(here, "the axolotl export runs after the backup")
    wait_until(lambda: b.finds(there, "axolotl"), "the memory on b", b, timeout=10)
    (hit,) = a.instance.search("axolotl", cwd=here).results
    started = time.monotonic()
    assert a.instance.memctl("forget", hit.cite, "--yes").returncode == 0
    wait_until(lambda: not b.finds(there, "axolotl"), "the forget on b, well before the next round", b, timeout=10)
    assert time.monotonic() - started < 10


def test_a_team_gets_what_was_shared_with_it_and_nothing_personal(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pg, root, machines = world
    pg.create_role("bob", PASSWORD)
    pg.create_role("memd_team_acme", PASSWORD)  # a team role (dropped after the test, as every role made so)
    pg.sql("GRANT memd_team_acme TO alice, bob")
    alice = Machine(root, "alice-laptop", pg.dsn("alice", PASSWORD), teams={"github.com/acme/api": "memd_team_acme"})
    bob = Machine(root, "bob-desktop", pg.dsn("bob", PASSWORD))
    machines += [alice, bob]
    shared = repository(tmp_path / "alice" / "api", "git@github.com:acme/api.git")
    private = repository(tmp_path / "alice" / "notes", "git@github.com:alice/notes.git")
    bobs = repository(tmp_path / "bob" / "api", "https://github.com/acme/api.git")
    alice.hook_prompt(private, "the wombat password rotation is on fridays")
    alice.hook_prompt(shared, "the quokka migration must run before the api deploy")
    wait_until(lambda: bob.finds(bobs, "quokka"), "the team memory on bob's machine", bob)
    assert not bob.instance.search("wombat", all_projects=True).results
    (quoted,) = alice.instance.search("quokka", cwd=shared).results  # a citation alice pastes to bob
    shown = bob.instance.memctl("show", f"mem:{quoted.cite}", "--json")
    assert json.loads(shown.stdout)["details"][0]["text"].startswith("the quokka migration"), shown.stderr
    alice.hook_prompt(private, "the platypus cache must be warmed before the demo")  # promoted by hand
    (hit,) = alice.instance.search("platypus", cwd=private).results
    promoted = alice.instance.memctl("share", hit.cite, "--team", "memd_team_acme", "--json")
    assert promoted.returncode == 0 and json.loads(promoted.stdout)["shared"] == 1, promoted.stderr
    wait_until(lambda: bool(bob.instance.search("platypus", all_projects=True).results), "the shared memory", bob)
    assert not bob.instance.search("wombat", all_projects=True).results
    # Forgets reach the team too: alice's of the project's memory, and bob's of the one shared by hand.
    (quokka,) = alice.instance.search("quokka", cwd=shared).results
    assert alice.instance.memctl("forget", quokka.cite, "--yes").returncode == 0
    wait_until(lambda: not bob.finds(bobs, "quokka"), "alice's forget on bob's machine", bob)
    (platypus,) = bob.instance.search("platypus", all_projects=True).results
    assert bob.instance.memctl("forget", platypus.cite, "--yes").returncode == 0
    wait_until(lambda: not pg.sql("SELECT 1 FROM memd.log WHERE op = 'put' AND scope = 'team'"), "no team row", bob)
    with psycopg.connect(pg.dsn("bob", PASSWORD)) as conn:  # the server itself refuses bob alice's personal rows
        mine = "SELECT count(*) FROM memd.log WHERE scope = 'personal' AND owner <> current_user"
        assert conn.execute(mine).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM memd.log WHERE scope = 'team'").fetchone()[0] >= 1  # type: ignore[index]
    assert pg.sql("SELECT count(*) FROM memd.log WHERE scope = 'personal' AND owner = 'alice'")[0][0] >= 2


def test_a_teammate_cannot_make_anyone_forget_what_they_did_not_share(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Bob knows the keys of alice's memories and writes tombstones by hand.  A team forget of
    one never shared with the team is dropped by the server; one he first 'shares' himself (a
    forged team put of her key) passes the server but no machine of alice's applies it, nor a
    personal one; his legitimate forget of a memory alice shared revokes the share (gone from the
    team and from his machine) but alice keeps her own."""
    pg, root, machines = world
    pg.create_role("bob", PASSWORD)
    pg.create_role("memd_team_acme", PASSWORD)  # a team role (dropped after the test, as every role made so)
    pg.sql("GRANT memd_team_acme TO alice, bob")
    teams = {"github.com/acme/api": "memd_team_acme"}
    alice = Machine(root, "alice-laptop", pg.dsn("alice", PASSWORD), teams=teams)
    desk = Machine(root, "alice-desktop", pg.dsn("alice", PASSWORD), teams=teams)
    bob = Machine(root, "bob-desktop", pg.dsn("bob", PASSWORD))
    machines += [alice, desk, bob]
    shared = repository(tmp_path / "alice" / "api", "git@github.com:acme/api.git")
    private = repository(tmp_path / "alice" / "notes", "git@github.com:alice/notes.git")
    on_desk = repository(tmp_path / "desk" / "notes", "git@github.com:alice/notes.git")
    bobs = repository(tmp_path / "bob" / "api", "https://github.com/acme/api.git")
    alice.hook_prompt(shared, "the quokka migration must run before the api deploy")
    alice.hook_prompt(private, "the wombat reply: rotate the keys on fridays")
    wait_until(lambda: bob.finds(bobs, "quokka"), "the team memory on bob's machine", bob)
    wait_until(lambda: desk.finds(on_desk, "wombat"), "alice's memory on her desktop", desk)
    ((wombat,),) = alice.instance.query("SELECT idem_key FROM events WHERE text LIKE '%wombat%' AND kind = 'prompt'")

    insert = (
        "INSERT INTO memd.log (scope, team, op, event_key, project_key, machine, body)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s)"
    )
    with psycopg.connect(pg.dsn("bob", PASSWORD), autocommit=True) as conn:
        conn.execute(insert, ("team", "memd_team_acme", "forget", wombat, "github.com/alice/notes", "m-bob", None))
        assert conn.execute("SELECT count(*) FROM memd.log WHERE event_key = %s", (wombat,)).fetchone() == (0,)
        conn.execute(insert, ("team", "memd_team_acme", "put", wombat, "github.com/alice/notes", "m-bob", b"{}"))
        conn.execute(insert, ("team", "memd_team_acme", "forget", wombat, "github.com/alice/notes", "m-bob", None))
        conn.execute(insert, ("personal", "", "forget", wombat, "github.com/alice/notes", "m-bob", None))
    desk.hook_prompt(on_desk, "the echidna note comes after the forged rows")
    for machine, where in ((alice, private), (desk, on_desk)):  # each has read past them: still there
        wait_until(lambda m=machine, w=where: m.finds(w, "echidna"), "a row after the forged ones", machine)
        assert machine.finds(where, "wombat"), machine.log()
    assert "sync_forget_refused" in alice.log()

    (quokka,) = bob.instance.search("quokka", cwd=bobs).results
    assert bob.instance.memctl("forget", quokka.cite, "--yes").returncode == 0
    ((key,),) = alice.instance.query("SELECT idem_key FROM events WHERE text LIKE '%quokka%' AND kind = 'prompt'")
    team_rows = "SELECT 1 FROM memd.log WHERE op = 'put' AND scope = 'team' AND event_key = %s"
    wait_until(lambda: not pg.sql(team_rows, (key,)), "no team row of it", bob)
    assert not bob.finds(bobs, "quokka")
    desk.hook_prompt(on_desk, "the numbat note comes after bob's forget")
    wait_until(lambda: alice.finds(private, "numbat"), "a row after bob's forget", alice)
    assert alice.finds(shared, "quokka"), "alice keeps her own memory: bob revoked the share only"


def test_killing_postgres_during_a_sync_of_10000_events_loses_and_duplicates_nothing(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pg, root, machines = world
    url = pg.dsn("alice", PASSWORD)
    a = Machine(root, "a", url)
    machines.append(a)
    here = repository(tmp_path / "a" / "api", "git@github.com:acme/api.git")
    sent = 10_000

    def capture(n: int) -> None:
        payload = {
            "session_id": f"s-{n // 500}", "cwd": here, "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_use_id": f"toolu_{n:06d}", "tool_input": {"command": f"make step-{n}"},
            "tool_response": {"stdout": f"step {n} done", "stderr": "", "interrupted": False},
        }  # fmt: skip
        request = Ingest(event="PostToolUse", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())
        assert a.instance.call(request, Ingested).event_id > 0

    for n in range(sent - 100):
        capture(n)
    b = Machine(root, "b", url)
    machines.append(b)
    pulled = lambda: b.instance.query("SELECT count(*) FROM sync_remote")[0][0]  # noqa: E731
    wait_until(lambda: pulled() >= 2000, "b's first pulls", b)
    pg.server.kill()  # mid-sync: a push or a pull is in flight on one of them
    wait_until(lambda: a.instance.status().sync.state == "failing", "a noticing the server is gone", a)  # type: ignore[union-attr]
    report = a.instance.status().sync
    assert report is not None and report.state == "failing"
    assert report.last_error and "Group" not in report.last_error.split(":")[0], report.last_error  # by its cause
    started = time.monotonic()
    for n in range(sent - 100, sent):  # capture goes on while the server is away
        capture(n)
    assert time.monotonic() - started < 10
    pg.server.start()
    wait_until(lambda: pulled() >= sent, "b's pulls after the restart", b, timeout=240)
    stored = a.instance.query("SELECT count(*) FROM events WHERE kind = 'tool'")[0][0]
    assert stored == sent
    assert pg.sql("SELECT count(*), count(DISTINCT event_key) FROM memd.log WHERE op = 'put'") == [(sent, sent)]
    keys = b.instance.query("SELECT idem_key FROM events e JOIN sync_remote r ON r.event_id = e.id")
    assert len(keys) == len({k for (k,) in keys}) == sent
    assert a.instance.status().sync.pending == 0  # type: ignore[union-attr]


def test_a_pull_never_passes_a_row_whose_transaction_may_still_commit(pg: PgDatabase) -> None:
    """seq is handed out at insert: a transaction that commits later with a lower seq must not
    be skipped by a reader that already passed a higher one (memd.store.remote's module doc)."""
    import anyio

    from memd.store import remote

    pg.create_role("alice", PASSWORD)
    pg.sql(SCHEMA)
    url = pg.dsn("alice", PASSWORD)

    server = remote.Server(words=True, words_indexed=False, vectors=False)

    def row(key: str) -> remote.Outgoing:
        return remote.Outgoing("personal", "", "put", key, "github.com/acme/api", b'{"k": 1}')

    async def scenario() -> None:
        slow = await psycopg.AsyncConnection.connect(url)
        fast = await psycopg.AsyncConnection.connect(url, autocommit=True)
        reader = await psycopg.AsyncConnection.connect(url, autocommit=True)
        async with slow, fast, reader:
            await slow.execute(
                "INSERT INTO memd.log (scope, op, event_key, project_key, machine, body)"
                " VALUES ('personal', 'put', 'first', 'k', 'a', '{}'::bytea)"
            )  # its transaction stays open
            await remote.push(fast, [row("second")], "b", server)
            assert await remote.pull(reader, remote.Cursor(0, 0), 10) == []
            await slow.commit()
            pulled = await remote.pull(reader, remote.Cursor(0, 0), 10)
            assert [r.event_key for r in pulled] == ["first", "second"]
            assert await remote.pull(reader, remote.Cursor(pulled[-1].txid, pulled[-1].seq), 10) == []
            await remote.push(fast, [row("second")], "b", server)  # a retried push stores nothing twice
            assert len(await remote.pull(reader, remote.Cursor(0, 0), 10)) == 2

    anyio.run(scenario)


def test_secrets_never_leave_even_from_a_store_that_keeps_them(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pg, root, machines = world
    url = pg.dsn("alice", PASSWORD)
    a, b = Machine(root, "a", url, privacy="secrets = false"), Machine(root, "b", url)
    machines += [a, b]
    here = repository(tmp_path / "a" / "api", "git@github.com:acme/api.git")
    there = repository(tmp_path / "b" / "api", "git@github.com:acme/api.git")
    token = "ghp_" + "x7Kq2ZpL9mVb3NcR8tWy5HdJ4sFg6Ae1Qo0U"
    keyless = "q8XrT2mVb9LkP3nZw7YcA1dF5gHs4Jt6"  # no name, no prefix: the shape layer's
    a.hook_prompt(here, f"the narwhal deploy uses {token} for now, and Client('{keyless}')")
    wait_until(lambda: b.finds(there, "narwhal"), "the memory on b", b)
    assert a.instance.query("SELECT count(*) FROM events WHERE text LIKE ?", f"%{token}%") == [(1,)]  # a's choice
    for secret, kind in ((token, "github-token"), (keyless, "random-token")):
        assert b.instance.query("SELECT count(*) FROM events WHERE text LIKE ?", f"%{secret}%") == [(0,)]
        assert b.instance.query("SELECT count(*) FROM events WHERE text LIKE ?", f"%[REDACTED:{kind}]%") == [(1,)]
        assert pg.sql("SELECT count(*) FROM memd.log WHERE position(%s::bytea in body) > 0", (secret.encode(),)) == [
            (0,)
        ]


def test_a_row_that_is_not_memds_is_passed_over_and_sync_goes_on(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pg, root, machines = world
    url = pg.dsn("alice", PASSWORD)
    with psycopg.connect(url, autocommit=True) as conn:  # another client of the same role wrote the table
        conn.execute(
            "INSERT INTO memd.log (scope, op, event_key, project_key, machine, body)"
            " VALUES ('personal', 'put', 'junk', 'github.com/acme/api', 'elsewhere', '\\x7b6e6f'::bytea)"
        )
    a, b = Machine(root, "a", url), Machine(root, "b", url)
    machines += [a, b]
    here = repository(tmp_path / "a" / "api", "git@github.com:acme/api.git")
    there = repository(tmp_path / "b" / "api", "git@github.com:acme/api.git")
    a.hook_prompt(here, "the axolotl job retries three times")
    wait_until(lambda: b.finds(there, "axolotl"), "the memory after the junk row", b)
    assert b.instance.status().sync.state == "syncing"  # type: ignore[union-attr]
    assert "sync_row_refused" in b.instance.stderr()
