"""./sanlens demo: bring the stack up, play a scenario of the fleet simulator through the whole
pipeline (simulator -> Telegraf -> Kafka -> Flink normalize -> loader -> ClickHouse -> dbt), show the result."""
from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from datetime import datetime, timezone

from confluent_kafka import Consumer, TopicPartition

from ingest.loader import rollups
from sanlensctl import cli, config, db, procs, stack
from sanlensctl.components import telegraf
from sanlensctl.errors import SanlensError

PIPELINE_GROUPS = {"sanlens-normalize": ["telemetry.metrics"], "sanlens-histograms": ["telemetry.samples"],
                   "sanlens-loader": ["telemetry.samples", "telemetry.deadletter", "telemetry.accounting",
                                      "telemetry.histograms", "inventory.topology"]}


def group_lag(group: str, topics: list[str]) -> int:
    """Messages on `topics` the consumer group has not committed yet."""
    consumer = Consumer({"bootstrap.servers": config.KAFKA_BOOTSTRAP, "group.id": group,
                         "enable.auto.commit": False, "log_level": 0})
    try:
        tps = [TopicPartition(t, p) for t in topics
               for p in consumer.list_topics(t, timeout=5).topics[t].partitions]
        return sum(consumer.get_watermark_offsets(tp, timeout=5)[1] - max(tp.offset, 0)
                   for tp in consumer.committed(tps, timeout=5))
    finally:
        consumer.close()


def topic_size(topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": config.KAFKA_BOOTSTRAP, "group.id": "sanlens-demo", "log_level": 0})
    try:
        parts = consumer.list_topics(topic, timeout=5).topics[topic].partitions
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1] for p in parts)
    finally:
        consumer.close()


def restart_telegraf() -> None:
    procs.stop(telegraf.NAME, timeout=15)
    pid = telegraf.start()
    procs.wait_for(lambda: telegraf.probe()["healthy"], 60, "telegraf", pid=pid, log=procs.log_file(telegraf.NAME))


class Progress:
    """Every few seconds: metrics/s into Kafka, accounting windows out, consumer lag."""

    def __init__(self, client, since: datetime):
        self.client, self.since = client, since
        self.t0 = self.last_t = time.monotonic()
        self.last_in = self.first_in = topic_size("telemetry.metrics")

    def line(self) -> str:
        now, size = time.monotonic(), topic_size("telemetry.metrics")
        rate = (size - self.last_in) / max(now - self.last_t, 1e-9)
        self.last_t, self.last_in = now, size
        windows = self.client.command("SELECT uniqExact(window_start) FROM sanlens.pipeline_accounting "
                                      "WHERE window_start >= {s:DateTime64(3)}", parameters={"s": self.since})
        lag = {g: group_lag(g, t) for g, t in PIPELINE_GROUPS.items()}
        return (f"    {now - self.t0:5.0f} s  metrics in {rate:9,.0f}/s  windows out {windows:5d}  "
                f"lag normalize {lag['sanlens-normalize']:7d}  histograms {lag['sanlens-histograms']:7d}  "
                f"loader {lag['sanlens-loader']:7d}")


def run(args) -> int:
    from ingest.simulator import __main__ as simulator, scenario as scenario_file
    from ingest.simulator.endpoints import Endpoints
    from ingest.simulator.run import Run

    try:
        s = scenario_file.load(args.scenario)
    except (OSError, ValueError, KeyError) as exc:
        raise SanlensError(f"{args.scenario}: {exc}") from None
    print("==> bringing the local stack up", flush=True)
    report = stack.up()
    if not all(c["healthy"] for c in report.values()):
        raise SanlensError("the stack is not healthy: see ./sanlens status and ./sanlens logs")
    client = db.client()
    since = datetime.now(timezone.utc).replace(microsecond=0)
    truth_dir = config.RUN / "simulator" / s.name
    duration = s.duration_s if args.backfill else (args.duration or s.duration_s / args.speed) * args.speed
    run = Run(s, truth_dir, config.KAFKA_BOOTSTRAP, duration, args.speed, args.backfill)
    progress = Progress(client, since)
    done = threading.Event()

    def report_progress():
        while not done.wait(5):
            print(progress.line(), flush=True)

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
        print(f"==> Telegraf polls {len(s.arrays)} arrays and {len(s.switches)} switches at {endpoints.base_url}",
              flush=True)
        restart_telegraf()
        print(f"==> playing scenario {s.name} ({fleet}) for {duration / args.speed:.0f} s at {args.speed:g}x "
              f"through Telegraf", flush=True)
        reporter.start()
        try:
            run.realtime(("127.0.0.1", config.TELEGRAF_LISTENER_PORT))
            time.sleep(3)  # Telegraf's last poll and flush
        finally:
            pollers.unlink(missing_ok=True)
            endpoints.stop()
            restart_telegraf()
    run.close()
    drained = _wait_drained()
    done.set()
    reporter.join()
    print(progress.line(), flush=True)
    print("==> rolling up the service-time histograms", flush=True)
    rollups.refresh(client, since)
    print("==> building the dbt marts", flush=True)
    cli.dbt("build", "--quiet")
    _summary(client, since, run, truth_dir)
    return 0 if drained else 1


# Telegraf's heartbeat keeps arriving, and Flink commits its offsets only at checkpoints (10 s):
# "caught up" is a lag below what a few heartbeats add.
CAUGHT_UP_LAG = 20


def _wait_drained(stalled_after: float = 120) -> bool:
    """Wait while the pipeline works through its backlog; give up when the lag stops going down."""
    best, last_progress = None, time.monotonic()
    while time.monotonic() - last_progress < stalled_after:
        lags = [group_lag(g, t) for g, t in PIPELINE_GROUPS.items()]
        if all(lag <= CAUGHT_UP_LAG for lag in lags):
            time.sleep(12)  # the last accounting window closes with the next heartbeat
            return True
        if best is None or sum(lags) < best:
            best, last_progress = sum(lags), time.monotonic()
        time.sleep(2)
    print(f"    the pipeline stopped catching up ({best} messages behind for {stalled_after:.0f} s): "
          "see ./sanlens status and ./sanlens logs", flush=True)
    return False


def _install_base_summary(client, run, truth_dir) -> None:
    """This run's arrays and hours: the mart's bucket-4 (<= 0.125 ms) share against the simulator's own
    histograms, and the upgrade effect across arrays."""
    truth = [json.loads(line) for line in (truth_dir / "histograms.jsonl").read_text().splitlines()]
    if not truth:
        return
    planted = defaultdict(lambda: [0, 0])
    for t in truth:
        planted[(t["firmware"], t["direction"])][0] += t["counts"][4]
        planted[(t["firmware"], t["direction"])][1] += sum(t["counts"])
    hours = sorted({t["hour"] for t in truth})
    models = sorted({a.model for a in run.s.arrays.values()})
    rows = client.query("""
        SELECT firmware, direction, max(arrays), sum(ios), sumIf(ios, bucket = 4) / sum(ios)
        FROM sanlens_marts.install_base_histogram
        WHERE array_model IN {models:Array(String)}
          AND toUnixTimestamp(period_start) BETWEEN {first:Int64} AND {last:Int64}
        GROUP BY firmware, direction ORDER BY direction, firmware""",
        parameters={"models": models, "first": hours[0], "last": hours[-1]}).result_rows
    table = [(fw, d, n, ios, planted[(fw, d)][1], f"{100 * share:.1f}",
              f"{100 * planted[(fw, d)][0] / max(planted[(fw, d)][1], 1):.1f}") for fw, d, n, ios, share in rows]
    print("\nInstall base, this run: I/Os in bucket 4 (0.0625-0.125 ms), measured by the pipeline against planted")
    cli.print_rows(["firmware", "direction", "arrays", "ios_measured", "ios_simulated", "pct_bucket4",
                    "pct_bucket4_planted"], table)
    effect = client.query("""
        SELECT array_model, from_firmware, to_firmware, direction, metric, arrays, round(mean_delta, 4),
               round(ci_low, 4), round(ci_high, 4), excludes_zero
        FROM sanlens_marts.upgrade_effect WHERE array_model IN {models:Array(String)}
        ORDER BY array_model, from_firmware, direction, metric""", parameters={"models": models})
    if effect.result_rows:
        print("\nUpgrade effect across arrays (after - before, matched hours; 95% bootstrap interval):")
        cli.print_rows(effect.column_names, effect.result_rows)


def _summary(client, since: datetime, run, truth_dir) -> None:
    acc = client.query("""
        SELECT unit, outcome, reason, sum(records) FROM sanlens.pipeline_accounting
        WHERE window_start >= {s:DateTime64(3)} GROUP BY unit, outcome, reason
        ORDER BY unit, outcome = 'in' DESC, outcome, reason""", parameters={"s": since})
    produced = sum(run.truth.records.values())
    print(f"\n{produced} records from the simulated fleet (plus Telegraf's heartbeat). "
          f"Pipeline accounting since {since:%H:%M:%S} UTC:")
    cli.print_rows(["unit", "outcome", "reason", "count"], acc.result_rows)
    hosts = client.query("""
        SELECT host, round(avgIf(value, metric = 'disk.read_latency' AND disk = 'D:')) AS read_us,
               round(avgIf(value, metric = 'disk.write_latency' AND disk = 'D:')) AS write_us,
               round(avgIf(value, metric = 'file.read_latency')) AS dmv_read_us,
               round(maxIf(value, metric = 'hba.outstanding_ios')) AS max_outstanding
        FROM sanlens.metrics WHERE loaded_at >= {s:DateTime64(3)} AND host != ''
        GROUP BY host ORDER BY host LIMIT 20""", parameters={"s": since})
    print("\nHost-side latency (Perfmon data disk, SQL Server file stats), microseconds:")
    cli.print_rows(hosts.column_names, hosts.result_rows)
    _install_base_summary(client, run, truth_dir)
    print(f"\nGround truth of this run: {truth_dir}\n"
          "What to look at next:\n"
          "  ./sanlens sql \"SELECT reason, count() FROM sanlens.deadletter GROUP BY reason\"\n"
          "  ./sanlens sql \"SELECT metric, unit, count() FROM sanlens.metrics GROUP BY metric, unit\"\n"
          "  ./sanlens sql \"SELECT * FROM sanlens_marts.install_base_histogram WHERE direction = 'write' LIMIT 40\"\n"
          "  ./sanlens report --out report   (HTML and PNG charts of the install base)\n"
          "  ./sanlens status            (health of every component)\n"
          "  ./sanlens down              (stop everything)")
