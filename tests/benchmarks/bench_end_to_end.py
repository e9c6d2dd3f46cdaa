"""Benchmark: samples/s end to end, Kafka -> normalize -> loader -> sanlens.metrics queryable, on the running
stack as users run it (every Flink job, the loader and its rollups, ClickHouse, Telegraf), with the two
ceilings beside it, measured in the same run on the same data.

1. A held-out stream: the firmware-rollout scenario (200 arrays, their hosts and switches) under names of
   this run's own, produced as a backfill into a topic apart (not timed).
2. End to end: the stream is copied into telemetry.metrics as fast as the broker takes it, and the run's
   samples are counted in sanlens.metrics until every one the normalize job put out is queryable and the
   accounting holds every record. Rates: records, samples decoded (each one queryable or dropped with
   its reason) and rows queryable, over the time from the first record sent to the last sample queryable,
   and sustained (first to last row loaded, from `loaded_at`). Then the time until the analytics jobs, which
   run after the ingest path (SANLENS_ANALYTICS_NICE), have caught up too.
3. Ceilings: a Flink job that only copies the same records Kafka -> Kafka (tests/benchmarks/copy_job.py;
   records/s, first to last record out), and an in-process insert of the same rows (the run's rows of
   sanlens.metrics, as Arrow) into a chdb engine of its own, the table created as the stack has it (rows/s).

The run's rows are deleted from the stack's tables at the end (ingest/loader/spans.py; the accounting and
the breakdown's tables keep them, under the run's names). Needs `./sanlens up` (or a stack of its own:
SANLENS_RUN and the SANLENS_*_PORT variables).

    .sanlens/venv/bin/python -m tests.benchmarks.bench_end_to_end [--hours 12]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka.admin import NewTopic

from ingest import topics
from ingest.loader import spans
from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config, db, offsets
from sanlensctl.components import flink
from sanlensctl.config import free_port
from sanlensctl.demo import CAUGHT_UP_LAG
from tests.benchmarks.bench_common import copy, fresh_topics, reader, require_stack, watch
from tests.support import ROOT, copier

SCENARIO = ROOT / "ingest" / "scenarios" / "firmware-rollout.yaml"


def held_out_stream(run_id: str, hours: float, topic: str) -> tuple[int, list[str]]:
    """The scenario under this run's names, backfilled into `topic`: (records, sites)."""
    with tempfile.TemporaryDirectory(dir=config.TMP) as work:
        text = SCENARIO.read_text().replace("initech", f"initech{run_id}").replace("umbrella", f"umbrella{run_id}")
        (Path(work) / "scenario.yaml").write_text(text)
        s = scenario_file.load(Path(work) / "scenario.yaml")
        run = Run(s, Path(work) / "truth", config.KAFKA_BOOTSTRAP, hours * 3600, backfill=True, topic=topic)
        records = run.backfill()
        run.close()
    return records, sorted({h.site for h in s.hosts.values()})


def copy_into(source: str, target: str, total: int) -> float:
    """Every record of `source` into `target`, keys kept; seconds taken."""
    consumer, t0 = reader(source), time.perf_counter()
    copy(consumer, copier(), target, total)
    consumer.close()
    return time.perf_counter() - t0


class Progress:
    """The run's records and samples as the accounting and sanlens.metrics hold them."""

    def __init__(self, client, sites: list[str]):
        self.client, self.sites = client, sites

    def accounted(self) -> dict[tuple[str, str], int]:
        rows = self.client.query(
            "SELECT unit, outcome, sum(records) FROM sanlens.pipeline_accounting "
            "WHERE site IN {s:Array(String)} GROUP BY unit, outcome",
            parameters={"s": self.sites},
        ).result_rows
        return {(unit, outcome): int(n) for unit, outcome, n in rows}

    def queryable(self) -> int:
        return int(
            self.client.command(
                "SELECT count() FROM sanlens.metrics WHERE site IN {s:Array(String)}", parameters={"s": self.sites}
            )
        )


def end_to_end(client, source: str, records: int, sites: list[str], timeout_s: float) -> dict:
    progress = Progress(client, sites)
    started = time.perf_counter()
    copy_s = copy_into(source, topics.METRICS, records)
    print(f"  sent {records:,} records into {topics.METRICS} in {copy_s:.1f} s", flush=True)
    last_print, done = 0.0, None
    while time.perf_counter() - started < timeout_s:
        accounted, rows = progress.accounted(), progress.queryable()
        records_in = accounted.get(("records", "in"), 0)
        samples_out = accounted.get(("samples", "out"), 0)
        if records_in == records and rows == samples_out:
            done = time.perf_counter()
            break
        if time.perf_counter() - last_print > 10:
            print(
                f"  {time.perf_counter() - started:5.0f} s: records accounted {records_in:,} / {records:,}, "
                f"samples queryable {rows:,} (of {samples_out:,} out so far)",
                flush=True,
            )
            last_print = time.perf_counter()
        time.sleep(1)
    if done is None:
        sys.exit(f"bench_end_to_end: error: not every sample queryable after {timeout_s:.0f} s")
    count, first, last = client.query(
        "SELECT count(), min(loaded_at), max(loaded_at) FROM sanlens.metrics WHERE site IN {s:Array(String)}",
        parameters={"s": sites},
    ).result_rows[0]
    return {
        "samples": count,
        "accounted": accounted,
        "seconds": done - started,
        "sustained_s": max((last - first).total_seconds(), 1e-3),
        "started": started,
    }


def analytics_caught_up(started: float, timeout_s: float) -> float:
    """Seconds from the first record sent until every Flink job after normalize has read its input to the end
    (the analytics run after the ingest path: SANLENS_ANALYTICS_NICE)."""
    behind = {job for job in flink.JOBS if job not in flink.INGEST_PATH}
    while behind and time.perf_counter() - started < timeout_s:
        behind = {job for job in behind if offsets.position(flink.group(job), flink.INPUTS[job]).lag > CAUGHT_UP_LAG}
        time.sleep(2)
    if behind:
        sys.exit(f"bench_end_to_end: error: {', '.join(sorted(behind))} still behind after {timeout_s:.0f} s")
    return time.perf_counter() - started


def copy_ceiling(source: str, run_id: str, records: int) -> float:
    """Records/s of the copy job, first to last record out."""
    prefix = f"bench-{run_id}"
    argv = [
        sys.executable,
        str(ROOT / "tests" / "benchmarks" / "copy_job.py"),
        "--input",
        source,
        "--output-prefix",
        prefix,
        "--bounded",
        "--from-earliest",
        "--group",
        f"{prefix}-copy",
        "--rest-port",
        str(free_port()),
    ]
    env = dict(config.tool_env(), SANLENS_RUN=str(config.RUN / f"job-{prefix}"))
    job = watch(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT), f"{prefix}.copy")
    shutil.rmtree(config.RUN / f"job-{prefix}", ignore_errors=True)
    if job.exit_code != 0 or job.written != records:
        sys.exit(f"bench_end_to_end: error: the copy job exited {job.exit_code}, {job.written:,} of {records:,} copied")
    return records / job.first_to_last_s


def insert_ceiling(client, sites: list[str]) -> tuple[float, int]:
    """Rows/s of an in-process chdb insert of the run's rows of sanlens.metrics, in batches as the loader's."""
    from chdb import session

    data = client.query_arrow(
        "SELECT * EXCEPT (loaded_at) FROM sanlens.metrics WHERE site IN {s:Array(String)}", parameters={"s": sites}
    )
    work = Path(tempfile.mkdtemp(dir=config.TMP))
    try:
        s = session.Session(str(work))
        s.query("CREATE DATABASE sanlens")
        s.query(client.query("SHOW CREATE TABLE sanlens.metrics").first_row[0])
        columns = ", ".join(data.column_names)
        t0 = time.perf_counter()
        for start in range(0, data.num_rows, 100_000):
            part = data.slice(start, 100_000)  # noqa: F841 (read by chdb's Python() table function)
            s.query(f"INSERT INTO sanlens.metrics ({columns}) SELECT * FROM Python(part)")
        elapsed = time.perf_counter() - t0
        assert int(s.query("SELECT count() FROM sanlens.metrics", "CSV").bytes()) == data.num_rows
        s.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return data.num_rows / elapsed, data.num_rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=12, help="simulated hours of the 200-array scenario (12)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds to wait for every sample (1800)")
    args = ap.parse_args()
    require_stack("bench_end_to_end")
    run_id = uuid.uuid4().hex[:6]
    held = f"bench-{run_id}.held"
    admin = fresh_topics("bench_end_to_end", [NewTopic(held, 4, 1), NewTopic(f"bench-{run_id}.copy", 4, 1)])
    client = db.client()
    sites: list[str] = []
    try:
        t0 = time.perf_counter()
        records, sites = held_out_stream(run_id, args.hours, held)
        print(f"held-out stream: {records:,} records ({', '.join(sites)}) in {time.perf_counter() - t0:.0f} s")
        print("end to end, the whole stack running:", flush=True)
        e2e = end_to_end(client, held, records, sites, args.timeout)
        samples = e2e["samples"]
        analytics_s = analytics_caught_up(e2e["started"], args.timeout)
        print(
            f"  the analytics jobs ({', '.join(j for j in flink.JOBS if j not in flink.INGEST_PATH)}) caught up "
            f"{analytics_s:.0f} s after the first record was sent",
            flush=True,
        )
        print("ceilings, on the same data, the stack still running:", flush=True)
        copy_rate = copy_ceiling(held, run_id, records)
        insert_rate, rows = insert_ceiling(client, sites)
        decoded = e2e["accounted"].get(("samples", "in"), 0)
        per_record = decoded / records
        dead = e2e["accounted"].get(("records", "deadletter"), 0)
        dropped = e2e["accounted"].get(("samples", "dropped"), 0)
        print(f"\n{'path':<58} {'records/s':>10} {'samples/s':>10} {'rows/s':>10}")
        for what, seconds in (
            ("end to end, first record sent to last sample queryable", e2e["seconds"]),
            ("end to end, sustained (first to last row loaded)", e2e["sustained_s"]),
        ):
            print(f"{what:<58} {records / seconds:>10,.0f} {decoded / seconds:>10,.0f} {samples / seconds:>10,.0f}")
        print(f"{'ceiling: Flink copy job Kafka -> Kafka':<58} {copy_rate:>10,.0f} {copy_rate * per_record:>10,.0f}")
        print(f"{'ceiling: in-process chdb insert of the same rows':<58} {'':>10} {'':>10} {insert_rate:>10,.0f}")
        print(
            f"\n{records:,} records, {decoded:,} samples decoded ({per_record:.1f} a record): {samples:,} rows "
            f"queryable in sanlens.metrics, {dropped:,} samples dropped with their reason, {dead:,} records "
            f"dead-lettered; {e2e['seconds']:.0f} s end to end, the analytics caught up at {analytics_s:.0f} s; "
            f"{rows:,} rows in the insert ceiling"
        )
        return 0
    finally:
        admin.delete_topics([held, f"bench-{run_id}.copy"])
        if sites:
            now = datetime.now(UTC)
            spans.delete(client, sites, now - timedelta(days=2), now + timedelta(hours=1))


if __name__ == "__main__":
    sys.exit(main())
