"""Ingest latency and throughput of the daemon, over the wire, without the hook client.

(a) latency: one connection sends ``--events`` ingests one after the other; reports the
round trip the client sees and the daemon's own receive-to-reply time (from Status).
(b) throughput, on a second fresh daemon: ``--clients`` processes, each with its own
connection, send ``--events`` ingests each at the same time; reports events/s over the
wall time and checks that the daemon stored every one.

    .venv/bin/python bench/ingest.py [--events 2000] [--clients 8]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
import uuid
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

from harness import isolated_daemon, markdown_table, payload_factory, summary

from memd.protocol import Ingest, Ingested, Latency, Ping, Pong
from memd_client.rpc import Client

TARGET_DAEMON_P50 = 1.0
TARGET_RATE = 2000


def payloads(prefix: str, n: int, size: int) -> list[bytes]:
    make = payload_factory(size)
    return [make(f"toolu_{prefix}_{i:07d}") for i in range(n)]


def send_all(client: Client, batch: list[bytes]) -> list[float]:
    """Ingest each payload in turn; the round trip of each, in ms."""
    times = []
    for payload in batch:
        started = time.perf_counter()
        client.call(Ingest(event="PostToolUse", sent_at_ns=time.time_ns(), payload=payload), Ingested)
        times.append((time.perf_counter() - started) * 1000)
    return times


def worker(socket: str, batch: list[bytes], ready: Barrier, out: Queue[tuple[float, float]]) -> None:
    with Client(socket) as client:
        client.call(Ping(), Pong)
        ready.wait()
        started = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes
        send_all(client, batch)
        out.put((started, time.perf_counter()))


def throughput(socket: str, clients: int, events: int, size: int, token: str) -> float:
    """Events/s of ``clients`` concurrent senders, from the first send to the last reply."""
    ctx = mp.get_context("fork")
    ready = ctx.Barrier(clients)
    out: Queue[tuple[float, float]] = ctx.Queue()
    procs = [
        ctx.Process(target=worker, args=(socket, payloads(f"{token}_c{c:02d}", events, size), ready, out))
        for c in range(clients)
    ]
    for proc in procs:
        proc.start()
    try:
        spans = [out.get(timeout=600) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join()
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    return clients * events / wall


def pcts(lat: Latency | dict[str, float] | None) -> list[object]:
    if lat is None:
        return ["", "", ""]
    if isinstance(lat, Latency):
        return [lat.p50, lat.p95, lat.p99]
    return [lat["p50"], lat["p95"], lat["p99"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2000, help="events per client (default 2000)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients in (b) (default 8)")
    parser.add_argument("--size", type=int, default=2048, help="payload bytes (default 2048)")
    args = parser.parse_args()
    token = uuid.uuid4().hex[:12]
    with isolated_daemon() as instance:  # (a) and (b) each on a fresh daemon: separate latency windows
        with instance.client() as client:
            rtt = summary(send_all(client, payloads(f"{token}_seq", args.events, args.size)))
        first = instance.status()
    sequential = first.latency_ms.get("ingest")
    with isolated_daemon() as instance:
        rate = throughput(instance.paths.socket, args.clients, args.events, args.size, token)
        status = instance.status()
    loaded = status.latency_ms.get("ingest")
    sent = args.events * args.clients
    ok = first.events == args.events and status.events == sent and first.rejected == status.rejected == 0

    print(f"ingest: {args.size}-byte PostToolUse payloads, fresh database\n")
    print(f"(a) latency: {args.events} sequential ingests over one connection, {first.events} stored\n")
    print(
        markdown_table(
            ["ms", "p50", "p95", "p99"],
            [
                ["client round trip", *pcts(rtt)],
                [f"daemon-side ingest (n={sequential.count if sequential else 0})", *pcts(sequential)],
            ],
        )
    )
    print(f"\n(b) throughput: {args.clients} client processes x {args.events} events, one connection each\n")
    print(
        markdown_table(
            ["events", "wall events/s", "daemon-side ingest p50 ms", "p95", "p99"],
            [[sent, round(rate), *pcts(loaded)]],
        )
    )
    if loaded and loaded.count < sent:
        print(f"\n(daemon-side figures under load cover the last {loaded.count} ingests: the daemon's window)")
    p50 = sequential.p50 if sequential else float("nan")
    print(
        f"\ndaemon-side p50 {p50:.3f} ms (target <= {TARGET_DAEMON_P50}); {rate:.0f} events/s with"
        f" {args.clients} clients (target >= {TARGET_RATE}); events sent {sent}, stored {status.events},"
        f" rejected {status.rejected}: {'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
