"""Benchmark: the embedded ClickHouse's CPU to insert telemetry.samples' messages and merge sanlens.metrics' parts.

Plays `--intervals` 10-second intervals of an install base of `--arrays` arrays × 50 volumes with 25 hosts each
(messages shaped as normalize writes them: a volume's read or write histogram, a host's record of four samples)
into a fresh embedded server with the project's migrations, through `sanlens.metrics_messages` in inserts of
`--batch` messages as the loader sends them, as fast as the server takes them; then waits until no merge runs.
Prints the server's CPU a row and the parts left: with the table as migrated, then with its merges stopped (the
inserts' share), then with each `--setting` given (a MergeTree setting of the table to try).

    .sanlens/venv/bin/python -m tests.benchmarks.bench_metrics_merges [--arrays 1000] [--intervals 30] [--batch 35000]
        [--setting merge_selector_base=10 ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import tempfile
import time
from pathlib import Path

from ingest.loader.loader import LOADED_THROUGH, THROUGH_SETTINGS
from sanlensctl import migrate
from tests.benchmarks.bench_backfill_cpu import TICKS
from tests.support import EmbeddedServer

ENTITY = ("site", "host", "disk", "sql_instance", "database", "file", "array", "volume", "host_port", "switch", "port")


def message(ts: str, entity: dict[str, str], samples: list[tuple[str, float, str, int]], offset: int) -> str:
    names = ",".join(f'"{k}":"{entity.get(k, "")}"' for k in ENTITY)
    listed = ",".join(f'{{"metric":"{m}","value":{v!r},"unit":"{u}","bucket":{b}}}' for m, v, u, b in samples)
    position = f'"kafka_partition":0,"kafka_offset":{offset}'
    return f'{{"ts":"{ts}",{names},"arrived_at":"{ts}","samples":[{listed}],{position}}}'


def interval(arrays: int, rng: random.Random) -> list[str]:
    """One interval's messages, the time left as TS: a volume's histogram has its non-empty buckets (about 7 of
    a direction's 32), a host record four latencies and rates."""
    out: list[str] = []
    for a in range(arrays):
        site, array = f"ib-{a // 20:03d}-dc", f"ib-af{a:04d}"
        for v in range(50):
            for d in ("read", "write"):
                first = rng.randint(1, 5)
                buckets = [(f"volume.{d}_service_time_hist", float(rng.randint(1, 20000)), "ios", b)
                           for b in range(first, first + 7)]  # fmt: skip
                entity = {"site": site, "array": array, "volume": f"{array}-v{v:02d}"}
                out.append(message("TS", entity, buckets, len(out)))
        for h in range(25):
            host = f"ib-{a:04d}-sql{h:02d}"
            for r in range(10):
                samples = [(f"disk.m{r}_{k}", rng.uniform(0, 5000), "us", -1) for k in range(4)]
                entity = {"site": site, "host": host, "disk": "D:", "sql_instance": f"{host}:MSSQL", "file": f"f{r}"}
                out.append(message("TS", entity, samples, len(out)))
    return out


def cpu_s(pid: int) -> float:
    """CPU seconds so far of one process, counted as bench_backfill_cpu counts the stack's."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(map(int, fields[11:15])) / TICKS


def play(batches: list[bytes], intervals: int, alter: str | None) -> tuple[float, float, int, str]:
    """Seconds to insert, server CPU-s with the merges after, rows, the parts left."""
    with tempfile.TemporaryDirectory(prefix="bench-merges-") as folder:
        server = EmbeddedServer(Path(folder) / "data").start()
        try:
            migrate.apply(server.url, quiet=True)
            ch = server.client()
            if alter:
                ch.command(alter)
            start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)  # within the table's TTL
            cpu0, t0 = cpu_s(server.proc.pid), time.perf_counter()
            for n in range(intervals):
                ts = (start + dt.timedelta(seconds=10 * n)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
                for batch in batches:
                    ch.raw_insert(LOADED_THROUGH["sanlens.metrics"], None, batch.replace(b"TS", ts.encode()),
                                  settings=THROUGH_SETTINGS, fmt="JSONEachRow")  # fmt: skip
            inserted_s = time.perf_counter() - t0
            idle = 0
            while idle < 3:  # a merge may start a moment after the last insert
                idle = 0 if ch.command("SELECT count() FROM system.merges") else idle + 1
                time.sleep(1)
            cpu = cpu_s(server.proc.pid) - cpu0
            rows = int(ch.command("SELECT count() FROM sanlens.metrics"))
            parts = ch.command("SELECT count(), max(level) FROM system.parts WHERE table = 'metrics' AND active")
            return inserted_s, cpu, rows, f"{parts[0]} parts, level up to {parts[1]}"
        finally:
            server.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arrays", type=int, default=1000)
    ap.add_argument("--intervals", type=int, default=30)
    ap.add_argument("--batch", type=int, default=35000, help="messages an insert (the loader's in a second)")
    ap.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE", help="a table setting to try")
    args = ap.parse_args()
    lines = interval(args.arrays, random.Random(12))
    batches = ["\n".join(lines[k : k + args.batch]).encode() for k in range(0, len(lines), args.batch)]
    print(f"{len(lines):,} messages an interval in {len(batches)} inserts, {args.intervals} intervals", flush=True)
    runs = [("as migrated", None), ("merges stopped", "SYSTEM STOP MERGES sanlens.metrics")]
    runs += [(s, f"ALTER TABLE sanlens.metrics MODIFY SETTING {s}") for s in args.setting]
    for label, alter in runs:
        inserted_s, cpu, rows, parts = play(batches, args.intervals, alter)
        print(
            f"{label}: {rows:,} rows inserted in {inserted_s:.1f} s; the server's CPU with "
            f"the merges after {cpu:.1f} s, {cpu / rows * 1e6:.2f} µs a row; {parts}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
