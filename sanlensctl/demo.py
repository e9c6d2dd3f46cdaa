"""./sanlens demo: bring the stack up, play a scenario of the fleet simulator through the whole
pipeline (simulator -> Telegraf -> Kafka -> Flink normalize -> loader -> ClickHouse -> dbt), show the result.

What the summary calls "this run" is this run's own records: the run's sites, arrays and hosts over the
span of simulated time it played. A run that plays a fleet over a span the store already holds for it
(the same scenario again, within its duration) replaces that span: the earlier run's rows of those
sites in the span are deleted first (ingest/loader/spans.py), the rest of it stays. Two demos play side by side on
one stack when their sites differ and at most one plays through Telegraf (`_hold`).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections import defaultdict, deque
from datetime import UTC, datetime
from urllib.parse import quote

from ingest import topics
from ingest.loader import rollups, spans
from ingest.loader.loader import DEFAULT_ROUTES
from queries import cohorts, host_health, incidents, pipeline_accounting, tier_migrations, upgrade_effect
from sanlensctl import config, db, dbt_project, offsets, stack
from sanlensctl.components import flink, loader, telegraf
from sanlensctl.errors import SanlensError
from sanlensctl.output import print_rows

# The pipeline's stages, each a consumer group: what it reads.
STAGES = {job: (flink.group(job), inputs) for job, inputs in flink.INPUTS.items()} | {
    "loader": (loader.GROUP, list(DEFAULT_ROUTES))
}

# Telegraf's heartbeat keeps arriving, a Flink job sees its input only once the job before it has
# checkpointed, and commits its offsets only at its own checkpoints (10 s each): a caught-up job stands up
# to two checkpoints of heartbeat samples behind (about 20 each). "Caught up" is a lag below that.
CAUGHT_UP_LAG = 100
RATE_OVER_S = 30  # committed offsets per second are measured over this much recent time


class Watch:
    """The pipeline's progress, stage by stage: each consumer group's committed offsets, its lag, and
    the rate at which its commits move."""

    def __init__(self, client, window_from: datetime, sites: list[str]):
        self.client, self.window_from, self.sites = client, window_from, sites
        self.t0 = time.monotonic()
        self.history: deque[tuple[float, dict[str, offsets.Position]]] = deque()
        self.last_advance = self.t0
        self.metrics_in = [(self.t0, offsets.topic_size(topics.METRICS))]
        self.lock = threading.Lock()
        self.playing_until: float | None = None  # when a live playback ends (time.monotonic)

    def sample(self) -> dict[str, offsets.Position]:
        now = time.monotonic()
        positions = {name: offsets.position(group, topics) for name, (group, topics) in STAGES.items()}
        with self.lock:
            # Progress is a stage with a backlog committing more: a caught-up stage keeps committing
            # Telegraf's heartbeat, which says nothing about the backlog behind a stalled one.
            previous = self.history[-1][1] if self.history else {}
            if any(
                p.lag > CAUGHT_UP_LAG and p.committed > previous[n].committed
                for n, p in positions.items()
                if n in previous
            ):
                self.last_advance = now
            self.history.append((now, positions))
            while len(self.history) > 2 and now - self.history[1][0] >= RATE_OVER_S:
                self.history.popleft()
        return positions

    def rate(self, stage: str) -> float:
        """Messages per second the stage committed recently."""
        with self.lock:
            (t_first, first), (t_last, last) = self.history[0], self.history[-1]
        return (last[stage].committed - first[stage].committed) / (t_last - t_first) if t_last > t_first else 0.0

    def accounted(self) -> dict:
        """The query parameters of this run's accounting: its sites since the window it started in."""
        return {"s": self.window_from, "sites": self.sites}

    def stalled_for(self) -> float:
        return time.monotonic() - self.last_advance

    def seconds_left(self, positions: dict[str, offsets.Position]) -> float | None:
        """The playback still to run, or from the measured rates the slowest stage's lag over its rate if that is
        longer (None while a stage with a backlog has not moved yet)."""
        left = max(self.playing_until - time.monotonic(), 0.0) if self.playing_until else 0.0
        for name, p in positions.items():
            if p.lag > CAUGHT_UP_LAG:
                rate = self.rate(name)
                if rate <= 0:
                    return None
                left = max(left, p.lag / rate)
        return left

    def line(self) -> str:
        positions = self.sample()
        now, size = time.monotonic(), offsets.topic_size(topics.METRICS)
        t_prev, size_prev = self.metrics_in[-1]
        self.metrics_in.append((now, size))
        windows = self.client.command(pipeline_accounting.WINDOWS, parameters=self.accounted())
        stages = "  ".join(f"{name} lag {p.lag:,} ({self.rate(name):,.0f}/s)" for name, p in positions.items())
        left = self.seconds_left(positions)
        eta = "" if left is None or left == 0 else f"  about {_duration(left)} left"
        return (
            f"    {now - self.t0:5.0f} s  metrics in {(size - size_prev) / max(now - t_prev, 1e-9):9,.0f}/s  "
            f"windows out {windows:5d}  {stages}{eta}"
        )


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _window_floor(t: datetime) -> datetime:
    """The start of the 10 s accounting window holding t (windows are aligned to 10 s; a run's start is not)."""
    return datetime.fromtimestamp(int(t.timestamp()) // 10 * 10, UTC)


def run(args) -> int:
    from ingest.simulator import __main__ as simulator
    from ingest.simulator import scenario as scenario_file
    from ingest.simulator.endpoints import Endpoints
    from ingest.simulator.run import Run

    try:
        s = scenario_file.load(args.scenario)
    except (OSError, ValueError, KeyError) as exc:
        raise SanlensError(f"{args.scenario}: {exc}") from None
    sites = sorted({c.site for group in (s.arrays, s.hosts, s.switches) for c in group.values()})
    held = _hold(sites, live=not args.backfill)  # noqa: F841  (the locks, until the demo ends)
    print("==> bringing the local stack up", flush=True)
    report = stack.up()
    if not all(c["healthy"] for c in report.values()):
        raise SanlensError("the stack is not healthy: see ./sanlens status and ./sanlens logs")
    client = db.client()
    since = datetime.now(UTC)
    truth_dir = config.RUN / "simulator" / s.name
    duration = s.duration_s if args.backfill else (args.duration or s.duration_s / args.speed) * args.speed
    run = Run(s, truth_dir, config.KAFKA_BOOTSTRAP, duration, args.speed, args.backfill)
    span = _span(run)
    if earlier := spans.held(client, sites, span["a"], span["b"]):
        print(
            f"==> the store holds {earlier:,} samples of an earlier run of these sites between "
            f"{span['a']:%H:%M} and {span['b']:%H:%M:%S} UTC: this run replaces them",
            flush=True,
        )
        spans.delete(client, sites, span["a"], span["b"])
    watch = Watch(client, _window_floor(since), sites)
    done = threading.Event()

    def report_progress():
        while not done.wait(5):
            print(watch.line(), flush=True)

    reporter = threading.Thread(target=report_progress, daemon=True)
    fleet = f"{len(s.arrays)} arrays, {len(s.hosts)} SQL Server hosts, {len(s.switches)} switches"
    if args.backfill:
        print(f"==> backfilling {duration / 3600:.1f} h of scenario {s.name} ({fleet}) straight into Kafka", flush=True)
        reporter.start()
        run.backfill()
    else:
        endpoints = Endpoints(run.fleet, run.truth, run.lock, config.SIMULATOR_PORT).start()
        pollers = telegraf.POLLERS / "pollers.conf"
        pollers.parent.mkdir(parents=True, exist_ok=True)
        pollers.write_text(simulator.telegraf_pollers(s, endpoints.base_url, s.interval_s / args.speed))
        print(
            f"==> Telegraf polls {len(s.arrays)} arrays and {len(s.switches)} switches at {endpoints.base_url}",
            flush=True,
        )
        telegraf.reload()
        print(
            f"==> playing scenario {s.name} ({fleet}) for {duration / args.speed:.0f} s at {args.speed:g}x "
            f"through Telegraf",
            flush=True,
        )
        watch.playing_until = time.monotonic() + duration / args.speed
        reporter.start()
        try:
            run.realtime(("127.0.0.1", config.TELEGRAF_LISTENER_PORT))
            time.sleep(3)  # Telegraf's last poll and flush
        finally:
            pollers.unlink(missing_ok=True)
            endpoints.stop()
            telegraf.reload()
    run.close()
    produced = sum(run.truth.records.values())
    print(f"==> {produced:,} records sent; waiting for every stage to work through them", flush=True)
    stall = _wait_drained(watch, args.stall_timeout)
    done.set()
    reporter.join()
    print(watch.line(), flush=True)
    if stall:
        _accounting(client, watch, run, partial=True)
        print(
            f"\nPARTIAL: the demo gave up waiting: {stall}. Every figure above counts only what the pipeline had "
            "processed by then; the install base and the upgrade effect are not shown.\n"
            "    ./sanlens status   ./sanlens logs   (the records are still in Kafka: the stages resume where "
            "they stopped)",
            flush=True,
        )
        return 1
    _wait_accounted(client, watch, produced)
    print("==> rolling up the service-time histograms", flush=True)
    rollups.refresh(client, since)
    print("==> building the dbt marts", flush=True)
    dbt_project.run("build", "--quiet")
    _summary(client, watch, run, truth_dir)
    return 0


TELEGRAF_LOCK = "telegraf"  # the one pollers file of the stack's Telegraf, and the simulator's port


def _hold(sites: list[str], live: bool) -> list:
    """Locks in the run folder, one per site of the scenario (and the stack's Telegraf for a demo played through it),
    each held while its file stays open, all taken at once or none. A second demo of a site would replace the first
    one's span while it plays: its deletes took the inventory rows the first had just loaded, and a customer's role
    then saw none of its sites. Demos of other sites play side by side, as the test suite's do."""
    folder = config.RUN / "demo-locks"
    folder.mkdir(parents=True, exist_ok=True)
    held = []
    for name in ([TELEGRAF_LOCK] if live else []) + [f"site-{site}" for site in sites]:
        lock = open(folder / f"{quote(name, safe='')}.lock", "a+")  # noqa: SIM115  (held until the demo ends)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            pid = lock.read().strip() or "?"
            for other in [lock, *held]:
                other.close()
            what = "through this stack's Telegraf" if name == TELEGRAF_LOCK else f"site {name.removeprefix('site-')}"
            raise SanlensError(
                f"another ./sanlens demo (pid {pid}) is playing {what} on this stack ({config.RUN}): wait for it to "
                "end, or stop it"
            ) from None
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        held.append(lock)
    return held


def _wait_drained(watch: Watch, stall_timeout: float) -> str | None:
    """Wait while any stage's committed offsets move; None once every stage has caught up, else why not."""
    while True:
        positions = watch.sample()
        if all(p.lag <= CAUGHT_UP_LAG for p in positions.values()):
            return None
        if watch.stalled_for() >= stall_timeout:
            behind = ", ".join(
                f"{name} {p.lag:,} messages behind" for name, p in positions.items() if p.lag > CAUGHT_UP_LAG
            )
            return f"no stage advanced for {stall_timeout:.0f} s ({behind})"
        time.sleep(2)


def _accounted_in(client, watch: Watch) -> int:
    return int(client.command(pipeline_accounting.RECORDS, parameters=watch.accounted()))


def _wait_accounted(client, watch: Watch, produced: int, timeout: float = 120, settled_s: float = 20) -> None:
    """The accounting is emitted every 5 s of processing time and then loaded: wait until it counts every
    record sent, or until it has not changed for `settled_s` (some never arrived: the summary says so)."""
    deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
    while time.monotonic() < deadline:
        counted = _accounted_in(client, watch)
        if counted >= produced:
            return
        if counted != last:
            last, since = counted, time.monotonic()
        elif time.monotonic() - since >= settled_s:
            return
        time.sleep(2)


def _accounting(client, watch: Watch, run, partial: bool = False) -> None:
    acc = client.query(pipeline_accounting.BY_OUTCOME, parameters=watch.accounted())
    produced = sum(run.truth.records.values())
    counted = _accounted_in(client, watch)
    heartbeats = client.command(pipeline_accounting.HEARTBEATS, parameters={"s": watch.window_from})
    title = "PARTIAL accounting" if partial else "Pipeline accounting"
    print(f"\n{title} of this run (sites {', '.join(watch.sites)}; windows from {watch.window_from:%H:%M:%S} UTC):")
    print_rows(["unit", "outcome", "reason", "count"], acc.result_rows)
    verdict = "all of them" if counted == produced else f"{produced - counted:,} NOT counted"
    print(
        f"records in: {counted:,} of the {produced:,} the simulated fleet sent ({verdict}); "
        f"plus {int(heartbeats or 0):,} of Telegraf's own heartbeat"
    )


def _summary(client, watch: Watch, run, truth_dir) -> None:
    _accounting(client, watch, run)
    hosts = client.query(host_health.LATENCY_OF_SITES_IN_SPAN, parameters={"sites": watch.sites, **_span(run)})
    print("\nHost-side latency of this run (Perfmon data disk, SQL Server file stats), microseconds:")
    print_rows(hosts.column_names, hosts.result_rows)
    _install_base_summary(client, run, truth_dir)
    _incidents_summary(client, watch, run, truth_dir)
    _tiering_summary(client, watch, run, truth_dir)
    print(
        f"\nGround truth of this run: {truth_dir}\n"
        "What to look at next:\n"
        '  ./sanlens sql "SELECT reason, count() FROM sanlens.deadletter GROUP BY reason"\n'
        '  ./sanlens sql "SELECT metric, unit, count() FROM sanlens.metrics GROUP BY metric, unit"\n'
        "  ./sanlens sql \"SELECT * FROM sanlens_marts.install_base_histogram WHERE direction = 'write' LIMIT 40\"\n"
        "  ./sanlens explain HOST          (where a host's I/O time goes, and the incidents that touched it)\n"
        '  ./sanlens sql "SELECT * FROM sanlens_marts.tier_migration_effects"   (what auto-tiering did)\n'
        "  ./sanlens report --out reports/demo   (HTML and PNG charts of the install base)\n"
        "  ./sanlens status            (health of every component)\n"
        "  ./sanlens down              (stop everything)"
    )


def _incidents_summary(client, watch: Watch, run, truth_dir) -> None:
    """The incidents the pipeline found in this run, next to the faults the scenario planted."""
    planted = [json.loads(line) for line in (truth_dir / "events.jsonl").read_text().splitlines()]
    planted = [e for e in planted if e["type"] in ("slow_drain", "hba_saturation", "workload_added")]
    at = lambda epoch: "" if epoch is None else f"{datetime.fromtimestamp(epoch, UTC):%H:%M:%S}"
    print("\nLatency faults the scenario planted (firmware upgrades and tiering move latency too, for the better):")
    print_rows(
        ["contributor", "component", "type", "start", "end"],
        [
            (e["contributor"], e["component"], e["type"], at(e["start"]), at(e["end"]) or "(to the end)")
            for e in planted
        ],
    )
    found = client.query(incidents.OF_SITES_IN_SPAN, parameters={"sites": watch.sites, **_span(run)})
    print("Incidents the pipeline found in this run (sanlens_marts.latency_incidents):")
    print_rows(found.column_names, found.result_rows)


def _tiering_summary(client, watch: Watch, run, truth_dir) -> None:
    """The tier-migration episodes the pipeline found in this run and their effect, next to the auto-tiering
    the scenario enabled."""
    planted = [json.loads(line) for line in (truth_dir / "events.jsonl").read_text().splitlines()]
    planted = [e for e in planted if e["type"] == "auto_tiering"]
    if not planted:
        return
    print("\nAuto-tiering the scenario enabled:")
    print_rows(
        ["volume", "start", "tier0 from", "tier0 target", "batch req/s", "time to effect s"],
        [
            (
                e["component"],
                f"{datetime.fromtimestamp(e['start'], UTC):%H:%M:%S}",
                e["magnitude"]["from_tier0"],
                e["magnitude"]["target_tier0"],
                f"+{e['magnitude']['batch_requests_gain']:.0%}",
                e["magnitude"]["time_to_effect_s"],
            )
            for e in planted
        ],
    )
    found = client.query(tier_migrations.OF_SITES_IN_SPAN, parameters={"sites": watch.sites, **_span(run)})
    print("Tier-migration episodes the pipeline found in this run (sanlens_marts.tier_migration_effects):")
    print_rows(found.column_names, found.result_rows)


def _span(run) -> dict:
    """This run's simulated time, as query parameters a (first sample) and b (last sample)."""
    return {"a": datetime.fromtimestamp(run.start_s, UTC), "b": datetime.fromtimestamp(run.start_s + run.duration, UTC)}


def _install_base_summary(client, run, truth_dir) -> None:
    """This run's arrays over this run's span: the share of I/Os in bucket 4 (0.0625-0.125 ms) per array model and
    firmware (a hybrid model's service times are its media's: never pooled with all-flash ones) against the
    simulator's own histograms, and the upgrade effect on this run's arrays."""
    truth = [json.loads(line) for line in (truth_dir / "histograms.jsonl").read_text().splitlines()]
    if not truth:
        return
    planted = defaultdict(lambda: [0, 0])
    for t in truth:
        planted[(t["model"], t["firmware"], t["direction"])][0] += t["counts"][4]
        planted[(t["model"], t["firmware"], t["direction"])][1] += sum(t["counts"])
    arrays = {"arrays": list(run.s.arrays), **_span(run)}
    rows = client.query(cohorts.OF_ARRAYS_IN_SPAN, parameters=arrays).result_rows
    table = []
    for model, fw, d, n, ios, share in rows:
        fast, total = planted[(model, fw, d)]
        table.append((model, fw, d, n, ios, total, f"{100 * share:.1f}", f"{100 * fast / max(total, 1):.1f}"))
    print(
        "\nInstall base, this run: I/Os in bucket 4 (0.0625-0.125 ms) per array model and firmware, measured by the "
        "pipeline against planted (I/O-weighted; per array: ./sanlens report)"
    )
    print_rows(
        ["model", "firmware", "direction", "arrays", "ios_measured", "ios_simulated"]
        + ["pct_bucket4", "pct_bucket4_planted"],
        table,
    )
    effect = client.query(upgrade_effect.OF_ARRAYS_IN_SPAN, parameters=arrays)
    if effect.result_rows:
        print(
            "\nUpgrade effect on this run's arrays (after - before over matched periods each way: whole hours where "
            "the data holds 6 on each side, else minutes; the share of I/Os in bucket 4, 0.0625-0.125 ms, and within "
            "0.125 ms in %, the arrays whose own 95% interval of the change within 0.125 ms excludes zero, the mean "
            "service time and the change of p99 in ms). Per array with its intervals: "
            "sanlens_marts.upgrade_effect_by_array; across the fleet: sanlens_marts.upgrade_effect"
        )
        print_rows(effect.column_names, effect.result_rows)
    elif any(e["type"] == "firmware_upgrade" for e in run.s.events):
        print(
            "\nUpgrade effect on this run's arrays: none. No upgraded array has array-reported service-time "
            "histograms on both sides of its change (a minute of data each way, besides the minute of the change)."
        )
