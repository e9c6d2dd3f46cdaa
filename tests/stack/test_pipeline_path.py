"""The whole path with real components: Kafka -> Flink SQL job -> loader -> ClickHouse -> dbt model."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer

from sanlensctl import config, install, procs
from sanlensctl import stack as stack_components
from sanlensctl.components import flink
from tests.support import in_process_groups, sanlens, stack_pids, wait_until


def test_a_record_travels_from_kafka_through_flink_and_clickhouse_into_a_dbt_model(stack, ch):
    host = f"path-{uuid.uuid4().hex[:8]}"
    record = {
        "name": "win_disk",
        "timestamp": int(time.time() * 1000),
        "tags": {"host": host, "source": host, "objectname": "LogicalDisk", "instance": "E:"},
        "fields": {"Avg._Disk_sec/Read": 0.012, "Disk_Reads_persec": 250},
    }
    producer = Producer(config.kafka_client())
    producer.produce("telemetry.metrics", json.dumps(record).encode(), key=host.encode())
    assert producer.flush(30) == 0

    rows = wait_until(
        lambda: (
            ch.query(
                "SELECT metric, value, disk FROM sanlens.metrics WHERE host = {h:String} ORDER BY metric",
                parameters={"h": host},
            ).result_rows
            if ch.command(f"SELECT count() FROM sanlens.metrics WHERE host = '{host}'") == 2
            else None
        ),
        90,
        "the record in ClickHouse",
    )
    assert rows == [("disk.read_latency", 12000.0, "E:"), ("disk.reads", 250.0, "E:")]

    out = sanlens("dbt", "build")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    summary = ch.query(
        "SELECT metric, samples, last_value FROM sanlens_marts.metric_series_summary "
        "WHERE host = {h:String} ORDER BY metric",
        parameters={"h": host},
    ).result_rows
    assert summary == [("disk.read_latency", 1, 12000.0), ("disk.reads", 1, 250.0)]


SUPERVISION = {"restarts", "last_exit", "supervision"}  # what the supervisor adds (sanlensctl/supervisor.py)


def test_status_json_reports_every_component_healthy_with_a_real_probe(stack):
    out = sanlens("status", "--json")
    report = json.loads(out.stdout)
    assert out.returncode == 0, report
    for name in ("kafka", "clickhouse", "flink", "telegraf", "inbox", "alertmanager", "notifier"):
        entry = report[name]
        assert entry["healthy"] is True, (name, entry)
        assert isinstance(entry["pid"], int) and entry["version"]
        expected = {"healthy", "pid", "port", "version", "detail", "memory_mib"} | SUPERVISION
        assert set(entry) - {"jobs"} == expected, (name, entry)
        assert entry["memory_mib"] > 0, (name, entry)  # resident memory of its processes
    assert report["flink"]["detail"].startswith("normalize: RUNNING, lag ")
    for job, progress in report["flink"]["jobs"].items():  # each job's lag and how fresh its output is
        assert progress["state"] == "RUNNING" and progress["lag"] >= 0, (job, progress)
        fresh = progress["freshness"]
        assert fresh["rows"] == 0 or fresh["p50_s"] <= fresh["p95_s"], (job, progress)
    assert report["kafka"]["port"] == config.KAFKA_PORT and report["clickhouse"]["port"] == config.CLICKHOUSE_PORT
    assert (
        report["alertmanager"]["port"] == config.ALERTMANAGER_PORT
        and report["alertmanager"]["version"] == install.ALERTMANAGER_VERSION
    )


def test_up_on_a_running_stack_starts_nothing(stack):
    """One process per component, one per Flink job and the supervisor, all alive; `up` again leaves them be."""
    pids = stack_pids(config.RUN)
    expected = sum(len(component.PROCESSES) for component in stack_components.COMPONENTS)
    assert len(pids) == expected == 8 + len(flink.JOBS) and all(procs.alive(p) for p in pids)
    again = sanlens("up", timeout=120)
    assert again.returncode == 0 and "already running" in again.stderr
    assert stack_pids(config.RUN) == pids


def test_the_analytics_jobs_get_the_cpu_after_the_ingest_path(stack):
    """Each analytics job's processes (its Python process and its JVM) and its session's scheduler group, where
    the kernel has one, at config.ANALYTICS_NICE; normalize, the loader and the rest at the default priority."""
    analytics = {f"flink-{job}" for job in flink.JOBS if job not in flink.INGEST_PATH}
    assert analytics and config.ANALYTICS_NICE > 0
    for component in stack_components.COMPONENTS:
        for name in component.PROCESSES:
            expected, leader = config.ANALYTICS_NICE if name in analytics else 0, procs.pid_of(name)
            group = in_process_groups([leader])
            assert len(group) >= (2 if name.startswith("flink-") else 1), (name, group)
            assert {os.getpriority(os.PRIO_PROCESS, pid) for pid in group} == {expected}, name
            autogroup = Path(f"/proc/{leader}/autogroup")
            assert not autogroup.exists() or autogroup.read_text().split()[-1] == str(expected), name


def test_migrations_are_recorded_and_idempotent(stack, ch):
    out = sanlens("migrate")
    assert out.returncode == 0 and "up to date" in out.stdout, out.stdout + out.stderr
    versions = [
        r[0] for r in ch.query("SELECT version FROM sanlens.schema_migrations FINAL ORDER BY version").result_rows
    ]
    assert versions == sorted(versions) and versions[0] == 1


def test_sql_command_prints_a_readable_table_csv_and_json(stack):
    q = "SELECT number AS n, toString(number * 2) AS doubled FROM numbers(3)"
    table = sanlens("sql", q)
    assert table.returncode == 0
    assert table.stdout.splitlines()[0].split() == ["n", "doubled"] and "(3 rows)" in table.stdout
    assert sanlens("sql", q, "--format", "csv").stdout.splitlines() == ["n,doubled", "0,0", "1,2", "2,4"]
    assert json.loads(sanlens("sql", q, "--format", "json").stdout)[2] == {"n": 2, "doubled": "4"}
    bad = sanlens("sql", "SELECT * FROM sanlens.nope")
    assert bad.returncode == 1 and bad.stderr.startswith("sanlens: error: Code: 60.") and bad.stderr.count("\n") == 1
    typo = sanlens("sql", "SELEC 1")
    assert typo.returncode == 1 and "Syntax error" in typo.stderr and "FORMAT Native" not in typo.stderr, typo.stderr
