"""Busy dashboards: every dashboard's own SQL as Grafana sends it, clients running it in a loop, and the loader's lag
sampled meanwhile. tests/stack/test_dashboard_load.py and tests/benchmarks/bench_dashboard_load.py share it."""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ingest.loader.loader import DEFAULT_ROUTES
from sanlensctl import db, offsets
from sanlensctl.components import loader
from tests.grafana_macros import ALL, expand
from tests.support import ROOT

DASHBOARDS = ROOT / "grafana" / "dashboards"
RANGE = {"now-24h": timedelta(hours=24), "now-6h": timedelta(hours=6), "now-1h": timedelta(hours=1)}


def dashboard_queries(
    end: datetime | None = None, span: timedelta | None = None, folder: Path = DASHBOARDS
) -> list[tuple[str, str]]:
    """(name, SQL) of every query a refresh of every dashboard of `folder` sends: panels' targets, query variables and
    annotations, macros expanded over the dashboard's default range (or `span`) ending at `end`, with
    $__interval as Grafana picks it for a panel about 1,000 px wide and every variable on All. A panel repeated on
    a variable is one copy per value: here the copy of the variable's first value."""
    end = end or datetime.now(UTC)
    queries = []
    for path in sorted(folder.glob("*.json")):
        board = json.loads(path.read_text())
        start = end - (span or RANGE[board["time"]["from"]])
        interval = max(int((end - start).total_seconds() / 1000), 1)
        variables = {
            v["name"]: v["query"].split(",")[0] if v["type"] == "custom" else ALL for v in board["templating"]["list"]
        }
        query_variables = {v["name"]: v["query"] for v in board["templating"]["list"] if v["type"] == "query"}
        panels = [q for p in board["panels"] for q in [p, *p.get("panels", [])] if q["type"] != "row"]
        first = {
            name: first_value(expand(query_variables[name], start, end, interval, variables))
            for name in {q["repeat"] for q in panels if q.get("repeat")}
        }
        sql = [
            (
                f"panel {q['title']}",
                t["rawSql"],
                {**variables, **({q["repeat"]: first[q["repeat"]]} if q.get("repeat") else {})},
            )
            for q in panels
            for t in q["targets"]
        ]
        sql += [(f"variable ${name}", query, variables) for name, query in query_variables.items()]
        annotations = [a for a in board.get("annotations", {}).get("list", []) if "target" in a]
        sql += [(f"annotation {a['name']}", a["target"]["rawSql"], variables) for a in annotations]
        queries += [(f"{path.stem}: {name}", expand(raw, start, end, interval, values)) for name, raw, values in sql]
    return queries


def first_value(variable_sql: str) -> list[str]:
    """A query variable's first value, as the one copy of a panel repeated on it."""
    rows = db.client().query(variable_sql).result_rows
    return [str(rows[0][0])] if rows else [""]


class Load:
    """`clients` threads, each with its own client, running `queries` in a loop (each from a different
    place in the list) until stop(): every query's latency, result rows and error."""

    def __init__(self, queries: list[tuple[str, str]], clients: int):
        self.queries, self.clients = queries, clients
        self.latencies: dict[str, list[float]] = {name: [] for name, _ in queries}
        self.rows: dict[str, int] = dict.fromkeys(self.latencies, 0)
        self.errors: list[tuple[str, str]] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._client, args=(k,), daemon=True) for k in range(clients)]

    def start(self) -> Load:
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(120)
        self.elapsed = time.monotonic() - self.started

    def _client(self, k: int) -> None:
        client = db.client(send_receive_timeout=120)
        i = k * len(self.queries) // self.clients
        while not self.stopping.is_set():
            name, sql = self.queries[i % len(self.queries)]
            t = time.monotonic()
            try:
                rows = len(client.query(sql).result_rows)
            except Exception as exc:  # every error is reported and fails the run
                self.errors.append((name, str(exc)[:300]))
                time.sleep(0.5)
                continue
            finally:
                i += 1
            self.latencies[name].append(time.monotonic() - t)
            self.rows[name] = max(self.rows[name], rows)

    def all_latencies(self) -> list[float]:
        return [s for times in self.latencies.values() for s in times]


def alone(queries: list[tuple[str, str]], rounds: int) -> dict[str, float]:
    """Each query's median latency in seconds, run `rounds` times by one client with nothing else querying."""
    client = db.client(send_receive_timeout=120)
    times: dict[str, list[float]] = {name: [] for name, _ in queries}
    for _ in range(rounds):
        for name, sql in queries:
            t = time.monotonic()
            client.query(sql)
            times[name].append(time.monotonic() - t)
    return {name: statistics.median(t) for name, t in times.items()}


def percentiles(times: list[float]) -> tuple[float, float, float]:
    """p50, p95 and max in milliseconds."""
    if len(times) < 2:
        return (times[0] * 1000,) * 3 if times else (0.0, 0.0, 0.0)
    cuts = statistics.quantiles(times, n=20, method="inclusive")
    return cuts[9] * 1000, cuts[18] * 1000, max(times) * 1000


class Lag:
    """The loader's position on its topics (committed, end, lag in messages), sampled every `every` s in a
    thread, each sample tagged with the phase the run is in."""

    def __init__(self, every: float):
        self.every, self.phase = every, "before"
        self.samples: list[tuple[str, float, offsets.Position]] = []  # phase, time, position
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Lag:
        self.thread.start()
        return self

    @staticmethod
    def now() -> offsets.Position:
        return offsets.position(loader.GROUP, list(DEFAULT_ROUTES))

    def _run(self) -> None:
        while not self.stopping.is_set():
            self.samples.append((self.phase, time.monotonic(), self.now()))
            self.stopping.wait(self.every)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(30)

    def of(self, phase: str) -> list[int]:
        return [position.lag for p, _, position in self.samples if p == phase]

    def last(self, phase: str) -> int | None:
        """The lag of the last sample if it was taken in `phase`."""
        return self.samples[-1][2].lag if self.samples and self.samples[-1][0] == phase else None


def report(load: Load, solo: dict[str, float] | None = None) -> None:
    """The queries' figures, printed as soon as the load ends (a run stopped while the loader drains keeps them)."""
    solo = solo or {}
    print(f"\n{'query':<72} {'alone':>6} {'runs':>5} {'rows':>6} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}")
    for name, times in load.latencies.items():
        p50, p95, top = percentiles(times)
        one = f"{solo[name] * 1000:.0f}" if name in solo else ""
        print(f"{name[:72]:<72} {one:>6} {len(times):>5} {load.rows[name]:>6} {p50:>7.0f} {p95:>7.0f} {top:>7.0f}")
    times = load.all_latencies()
    p50, p95, top = percentiles(times)
    one = f"{statistics.median(solo.values()) * 1000:.0f}" if solo else ""
    print(
        f"{'all queries':<72} {one:>6} {len(times):>5} {'':>6} {p50:>7.0f} {p95:>7.0f} {top:>7.0f}\n"
        f"{len(times) / load.elapsed:.1f} queries/s over {load.elapsed:.0f} s from {load.clients} clients; "
        f"{len(load.errors)} errors; {sum(1 for r in load.rows.values() if not r)} of {len(load.rows)} queries "
        "returned no rows"
    )
    for name, error in load.errors[:10]:
        print(f"  error: {name}: {error}")
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


def report_lag(lag: Lag) -> None:
    print("\nloader lag (messages)  samples   mean    max   last")
    for phase in ("before", "during", "after"):
        lags = lag.of(phase)
        if lags:
            print(f"  {phase:<20} {len(lags):>8} {statistics.mean(lags):>6.0f} {max(lags):>6} {lags[-1]:>6}")
