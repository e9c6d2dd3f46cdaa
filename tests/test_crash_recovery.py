"""kill -9 a component of the tests' stack while a fleet's backfill flows through it, or stop and start the
whole stack; the supervisor (or `./sanlens up`) starts it again, and once the stream is through, the books
are exact: every record counted in once, every sample in sanlens.metrics once, every accounting window
balanced, and the histograms (10 s and the hourly rollup per array) equal to the simulator's truth, which a
lost baseline or a replayed delta would break."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections import Counter

import pytest

from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config, procs
from tests.support import sanlens, wait_until

SCENARIO = """
name: crash-{id}
seed: 11
interval_s: 60
duration_s: 7200
customers:
  - name: c-{id}
    sites:
      - name: {site}
        switches: [{{name: {id}-sw, ports: 32}}]
        arrays: [{{count: 8, name: "{id}-af{{i:02d}}", model: M-{id}, media: ssd, firmware: 3.1.3}}]
        hosts: [{{per_array: 1, name: "{{array}}-sql{{j}}", workload: tpce, iops: 3000}}]
"""
IDENTITY = "metric, bucket, host, disk, sql_instance, database, file, array, volume, host_port, switch, port, tags, ts"


def status() -> dict:
    return json.loads(sanlens("status", "--json").stdout)


def kill(process: str) -> int:
    """SIGKILL to the process and everything it started (a Flink job's JVM, the embedded server's engine)."""
    pid = procs.pid_of(process)
    assert pid, f"{process} is not running"
    os.killpg(pid, signal.SIGKILL)
    return pid


def one(ch, sql: str, site: str):
    return ch.command(sql, parameters={"s": site})


def accounted(ch, site: str) -> Counter:
    rows = ch.query(
        "SELECT unit, outcome, reason, sum(records) FROM sanlens.pipeline_accounting WHERE site = {s:String} "
        "GROUP BY ALL",
        parameters={"s": site},
    ).result_rows
    return Counter({(u, o, r): n for u, o, r, n in rows})


def truth_per_bucket(truth: list[dict]) -> Counter:
    out = Counter()
    for t in truth:
        for bucket, ios in enumerate(t["counts"]):
            if ios:
                out[t["array"], t["direction"], bucket] += ios
    return out


def loaded_per_bucket(ch, table: str, site: str) -> Counter:
    rows = ch.query(
        f"SELECT array, direction, bucket, sum(ios) FROM sanlens.{table} FINAL "
        "WHERE site = {s:String} AND source = 'array' GROUP BY ALL HAVING sum(ios) > 0",
        parameters={"s": site},
    ).result_rows
    return Counter({(a, d, b): n for a, d, b, n in rows})


LOADED = "SELECT count() FROM sanlens.metrics WHERE site = {s:String}"


@pytest.mark.parametrize(
    "component, process, started",
    [
        # the job's output becomes visible with its checkpoints: kill it once some is out
        ("flink", "flink-normalize", LOADED),
        ("flink", "flink-histograms", "SELECT count() FROM sanlens.service_time_hist_10s WHERE site = {s:String}"),
        ("loader", "loader", LOADED),
        ("kafka", "kafka", LOADED),
        ("clickhouse", "clickhouse", LOADED),
    ],
)
def test_a_component_killed_mid_stream_loses_nothing_and_doubles_nothing(
    stack, ch, tmp_path, component, process, started
):
    def crash():
        restarts = status()[component]["restarts"]
        killed = kill(process)
        healed = wait_until(
            lambda: (s := status()[component])["healthy"] and s["restarts"] > restarts and s,
            120,
            f"{process} restarted",
        )
        assert healed["last_exit"]["process"] == process and procs.pid_of(process) != killed

    through_a_fault(ch, tmp_path, started, crash)


def test_the_stack_stopped_and_started_mid_stream_resumes_where_it_stopped(stack, ch, tmp_path):
    def resumed() -> int:
        return procs.log_file("flink-normalize").read_text().count("resuming from")

    def down_and_up():
        before = resumed()
        out = sanlens("down")
        assert out.returncode == 0 and "deleted" not in out.stdout, out.stdout + out.stderr
        out = sanlens("up", timeout=900)
        assert out.returncode == 0, out.stdout + out.stderr
        assert resumed() == before + 1  # from the checkpoint its cancellation kept

    through_a_fault(ch, tmp_path, LOADED, down_and_up)


def through_a_fault(ch, tmp_path, started: str, fault) -> None:
    """A fleet's backfill into telemetry.metrics; `fault()` once the `started` query counts some of its
    output; then the books, once the stream is through."""
    run_id = uuid.uuid4().hex[:6]
    site = f"crash-{run_id}"
    (tmp_path / "crash.yaml").write_text(SCENARIO.format(id=f"k{run_id}", site=site))
    run = Run(scenario_file.load(tmp_path / "crash.yaml"), tmp_path / "truth", config.KAFKA_BOOTSTRAP, backfill=True)
    sent = run.backfill()
    run.close()
    truth = truth_per_bucket(
        [json.loads(line) for line in (tmp_path / "truth" / "histograms.jsonl").read_text().splitlines()]
    )

    wait_until(lambda: one(ch, started, site) > 0, 120, f"the first output of {site}")
    in_at_fault = accounted(ch, site)["records", "in", ""]
    fault()
    assert in_at_fault < sent, "the stream was through before the fault: make the scenario longer"

    def through(books: Counter) -> bool:
        """Every record in, and the verdicts on all records and samples out (they may come a little later,
        from another subtask's transaction)."""
        verdicts = Counter()
        for (unit, outcome, _), n in books.items():
            verdicts[unit] += n if outcome != "in" else 0
        return books["records", "in", ""] >= sent and all(verdicts[u] >= books[u, "in", ""] for u in verdicts)

    books = wait_until(lambda: (a := accounted(ch, site)) and through(a) and a, 300, f"{sent} records through")
    assert books["records", "in", ""] == sent  # no record counted twice, around the fault either
    assert books["records", "out", ""] == sent  # the simulator sends only well-formed records
    samples_out = books["samples", "out", ""]
    dropped = {r: n for (u, o, r), n in books.items() if u == "samples" and o == "dropped"}
    assert samples_out + sum(dropped.values()) == books["samples", "in", ""]
    wait_until(lambda: one(ch, LOADED, site) >= samples_out, 300, f"{samples_out} samples loaded")
    rows, distinct = ch.query(
        f"SELECT count(), uniqExact({IDENTITY}) FROM sanlens.metrics WHERE site = {{s:String}}",
        parameters={"s": site},
    ).first_row
    assert (rows, distinct) == (samples_out, samples_out)
    unbalanced = ch.query(
        "SELECT window_start, unit, sumIf(records, outcome = 'in') - sumIf(records, outcome != 'in') AS off "
        "FROM sanlens.pipeline_accounting WHERE site = {s:String} GROUP BY ALL HAVING off != 0",
        parameters={"s": site},
    ).result_rows
    assert unbalanced == []

    # the same histograms as the truth, so as a run without the fault: no baseline lost, no delta twice
    for table in ("service_time_hist_10s", "service_time_hist_array_1h"):
        wait_until(lambda table=table: loaded_per_bucket(ch, table, site) == truth, 300, f"{table} equal to the truth")
