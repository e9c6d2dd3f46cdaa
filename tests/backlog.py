"""A backlog produced at once: Perfmon disks of many hosts over many intervals, as a fleet of agents with disk
buffers sends them after a Kafka outage, or as a history import does; then how the stack drains it. Shared by
tests/stack/test_backlog.py (the acceptance on the test stack) and tests/benchmarks/bench_backlog.py (the same, with
the figures printed).

A record is Telegraf's `win_disk` (win_perf_counters, LogicalDisk) with seven fields: seven samples, of which
the histograms job turns the read and write latencies, each with its rate, into a host histogram row."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ingest import topics
from sanlensctl import offsets, procs
from sanlensctl.components import flink
from tests.support import copier

DISK = "D:"
INTERVAL_S = 10
SAMPLES_PER_RECORD = 7
CAUGHT_UP = 1_000  # messages behind: a job has caught up


@dataclass(frozen=True)
class Burst:
    site: str
    hosts: int
    intervals: int
    first: datetime  # the first interval's time; the last is `intervals - 1` intervals later

    @property
    def records(self) -> int:
        return self.hosts * self.intervals

    def host(self, i: int) -> str:
        return f"{self.site}-sql{i:05d}"


def fields(host: int, interval: int) -> dict[str, float]:
    """A disk's Perfmon counters, varied so that the histograms spread over buckets: latencies 0.1 to 25.6 ms."""
    read_s = 0.0001 * 2 ** ((host + interval) % 9)
    return {
        "Avg._Disk_sec/Read": read_s,
        "Avg._Disk_sec/Write": read_s / 2,
        "Disk_Reads_persec": 100.0 + host % 50,
        "Disk_Writes_persec": 40.0 + interval % 30,
        "Disk_Read_Bytes_persec": 8192.0 * (100 + host % 50),
        "Disk_Write_Bytes_persec": 65536.0 * (40 + interval % 30),
        "Current_Disk_Queue_Length": float(host % 4),
    }


def produce(site: str, hosts: int, intervals: int) -> Burst:
    """Every record of the burst into telemetry.metrics as fast as the broker takes them, keyed by host (the
    source, as Telegraf's Kafka output keys them), oldest interval first, ending an interval ago."""
    now = int(time.time()) // INTERVAL_S * INTERVAL_S
    burst = Burst(site, hosts, intervals, datetime.fromtimestamp(now - intervals * INTERVAL_S, UTC))
    producer = copier()
    first_s = int(burst.first.timestamp())
    for t in range(intervals):
        for h in range(hosts):
            record = {
                "name": "win_disk",
                "timestamp": first_s + t * INTERVAL_S,
                "tags": {"host": burst.host(h), "instance": DISK, "site": site, "objectname": "LogicalDisk"},
                "fields": fields(h, t),
            }
            while True:
                try:
                    producer.produce(topics.METRICS, json.dumps(record).encode(), key=burst.host(h).encode())
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
    producer.flush(120)
    return burst


@dataclass
class Drain:
    """How the Flink jobs drained: per job its lag over time, its peak resident memory, its restarts."""

    started: float = field(default_factory=time.monotonic)
    lags: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # job -> (seconds, lag)
    peak_bytes: dict[str, int] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)
    caught_up_s: dict[str, float] = field(default_factory=dict)

    def sample(self) -> None:
        now = time.monotonic() - self.started
        for job in flink.JOBS:
            name = f"flink-{job}"
            self.peak_bytes[job] = max(self.peak_bytes.get(job, 0), procs.resident_bytes(name))
            try:
                lag = offsets.position(flink.group(job), flink.INPUTS[job]).lag
            except Exception:  # the broker busy: the next round
                continue
            self.lags.setdefault(job, []).append((now, lag))
            self.states[job] = flink.state(job)
            if lag < CAUGHT_UP and self.states[job] == "RUNNING":
                self.caught_up_s.setdefault(job, now)
            else:
                self.caught_up_s.pop(job, None)

    def done(self) -> bool:
        return len(self.caught_up_s) == len(flink.JOBS)

    def peak_lag(self, job: str) -> int:
        return max((lag for _, lag in self.lags.get(job, [])), default=0)

    def drain_rate(self, job: str) -> float:
        """Messages a second from the job's peak lag to caught up."""
        series = self.lags.get(job, [])
        if not series or job not in self.caught_up_s:
            return 0.0
        at, peak = max(series, key=lambda s: s[1])
        seconds = self.caught_up_s[job] - at
        return peak / seconds if seconds > 0 else float("inf")

    def report(self) -> list[str]:
        lines = []
        for job in flink.JOBS:
            caught = self.caught_up_s.get(job)
            lines.append(
                f"{job:<11} {self.states.get(job, '?'):<8} peak lag {self.peak_lag(job):>9,}  "
                + (f"caught up at {caught:6.1f} s, {self.drain_rate(job):>9,.0f} msg/s" if caught else "BEHIND")
                + f"  peak memory {self.peak_bytes.get(job, 0) / 2**20:6.0f} MiB"
            )
        return lines


def drain(timeout_s: float, every_s: float = 2.0, progress=None) -> Drain:
    """Samples the jobs until every one is RUNNING and less than CAUGHT_UP messages behind, or `timeout_s`."""
    d = Drain()
    while time.monotonic() - d.started < timeout_s:
        d.sample()
        if progress:
            progress(d)
        if d.done():
            break
        time.sleep(every_s)
    return d


def host_histogram_rows(client, burst: Burst) -> int:
    """The burst's host histogram rows in ClickHouse: one per disk, interval and direction when all is there."""
    return client.query(
        "SELECT count() FROM (SELECT DISTINCT host, disk, sample_ts, direction FROM sanlens.service_time_hist_10s "
        "WHERE site = {site:String} AND source = 'host_interval_avg' AND sample_ts >= {first:DateTime64(3)} "
        "AND sample_ts < {end:DateTime64(3)})",
        parameters={
            "site": burst.site,
            "first": burst.first,
            "end": burst.first + timedelta(seconds=burst.intervals * INTERVAL_S),
        },
    ).result_rows[0][0]
