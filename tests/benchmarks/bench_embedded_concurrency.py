"""Benchmark: reads in parallel on the embedded server, and how long an insert waits behind slow reads.

On an embedded server of its own (a scratch folder, no stack), with a table of `--rows` rows:

- one CPU-bound read alone (a GROUP BY with quantiles over the whole table), then `--clients` of them at
  once: serialised, they end one after the other; in parallel, together (on 2 cores, no sooner: one read
  already keeps both busy);
- `--clients` reads that only wait (`sleepEachRow`, 2 s each, no CPU) at once: in parallel, about 2 s;
- an insert of 10,000 rows, and a short read, alone, then every 0.5 s while `--clients` clients run the
  CPU-bound read over and over.

Run it from another checkout (e.g. `git archive HEAD | tar -x -C DIR`, this file copied in) to measure
that checkout's server on the same machine.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_embedded_concurrency [--rows 20000000] [--clients 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from tests.support import ROOT, EmbeddedServer

HEAVY = "SELECT i % 1000 AS k, avg(v), quantile(0.99)(v) FROM bench.t GROUP BY k FORMAT Null"
WAITING = "SELECT sleepEachRow(0.5) FROM numbers(4) SETTINGS max_block_size = 1 FORMAT Null"


def timed(server: EmbeddedServer, sql: str) -> float:
    t = time.perf_counter()
    server.client(send_receive_timeout=600, settings={"max_execution_time": 600}).command(sql)
    return time.perf_counter() - t


def at_once(server: EmbeddedServer, sql: str, n: int) -> tuple[float, list[float]]:
    """The wall time of n copies of `sql` started together, and each one's time."""
    times = [0.0] * n

    def one(k: int) -> None:
        times[k] = timed(server, sql)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t, times


def times_during(server: EmbeddedServer, action: str, clients: int) -> list[float]:
    """Seconds each of 6 actions took, one every 0.5 s, while `clients` threads run the CPU-bound read over and
    over: an insert of 10,000 rows, or a short read (a count over 1,000 rows of the table)."""
    client, rows = server.client(), [[i, i * 0.5] for i in range(10_000)]
    stopping = threading.Event()

    def busy() -> None:
        while not stopping.is_set():
            timed(server, HEAVY)

    threads = [threading.Thread(target=busy) for _ in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(1 if clients else 0)  # the reads are running
    out = []
    for _ in range(6):
        t = time.perf_counter()
        if action == "insert":
            client.insert("bench.t", rows, column_names=["i", "v"])
        else:
            client.command("SELECT count() FROM bench.t WHERE i < 1000")
        out.append(time.perf_counter() - t)
        time.sleep(0.5)
    stopping.set()
    for thread in threads:
        thread.join()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--clients", type=int, default=4)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(dir=os.environ.get("TMPDIR", ROOT / ".sanlens")))
    server = EmbeddedServer(work / "ch").start()
    try:
        c = server.client(send_receive_timeout=600)
        c.command("CREATE DATABASE bench")
        c.command("CREATE TABLE bench.t (i UInt64, v Float64) ENGINE = MergeTree ORDER BY i")
        c.command(f"INSERT INTO bench.t SELECT number, rand() / 4294967295 FROM numbers({args.rows})")
        c.command("OPTIMIZE TABLE bench.t FINAL")
        n = args.clients
        print(f"{ROOT}: {args.rows:,} rows, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        alone = statistics.median(timed(server, HEAVY) for _ in range(3))
        wall, each = at_once(server, HEAVY, n)
        print(f"CPU-bound read alone (median of 3)      {alone:6.2f} s")
        print(f"{n} at once: all done after             {wall:6.2f} s  = {wall / alone:.1f} x one "
              f"(each {min(each):.2f}-{max(each):.2f} s)")  # fmt: skip
        wall, each = at_once(server, WAITING, n)
        print(f"{n} reads waiting 2 s each, at once     {wall:6.2f} s")
        for action, what in (("insert", "insert of 10,000 rows"), ("read", "short read (1,000 rows)")):
            quiet, busy = times_during(server, action, 0), times_during(server, action, n)
            print(
                f"{what:<24} alone: median {statistics.median(quiet):.3f} s, max {max(quiet):.3f} s; "
                f"during {n} CPU-bound reads: median {statistics.median(busy):.3f} s, max {max(busy):.3f} s"
            )
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
