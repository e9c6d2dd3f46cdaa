"""./sanlens demo: bring the stack up, play a simulated fleet through the whole pipeline, show the result."""
from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, TopicPartition

from sanlensctl import cli, config, db, stack
from sanlensctl.errors import SanlensError


def loader_lag() -> int:
    """Messages on telemetry.samples the loader has not committed yet."""
    consumer = Consumer({"bootstrap.servers": config.KAFKA_BOOTSTRAP, "group.id": "sanlens-loader",
                         "enable.auto.commit": False, "log_level": 0})
    try:
        parts = consumer.list_topics("telemetry.samples", timeout=5).topics["telemetry.samples"].partitions
        tps = [TopicPartition("telemetry.samples", p) for p in parts]
        lag = 0
        for tp in consumer.committed(tps, timeout=5):
            high = consumer.get_watermark_offsets(tp, timeout=5)[1]
            lag += high - (tp.offset if tp.offset >= 0 else 0)
        return lag
    finally:
        consumer.close()


def run(args) -> int:
    sys.path.insert(0, str(config.ROOT / "ingest" / "simulator"))
    import hostfeed

    print("==> bringing the local stack up", flush=True)
    report = stack.up()
    if not all(c["healthy"] for c in report.values()):
        raise SanlensError("the stack is not healthy: see ./sanlens status and ./sanlens logs")
    client = db.client()
    before = client.command("SELECT count() FROM sanlens.metrics")
    print(f"==> playing {args.hosts} SQL Server hosts into Telegraf for {args.duration:.0f} s "
          f"(Telegraf -> Kafka -> Flink normalize -> loader -> ClickHouse)", flush=True)
    t0 = time.monotonic()
    last = [t0, 0]

    def progress(sent: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 5:
            rows = client.command("SELECT count() FROM sanlens.metrics") - before
            rate = (sent - last[1]) * 5 / (now - last[0])  # each line carries 5 fields
            print(f"    {now - t0:5.0f} s  metrics in {rate:8.0f}/s  samples in ClickHouse {rows:8d}  "
                  f"loader lag {loader_lag():6d}", flush=True)
            last[:] = [now, sent]

    sent = hostfeed.play(("127.0.0.1", config.TELEGRAF_LISTENER_PORT), args.hosts, args.duration, on_tick=progress)
    expected = sent * 5
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = client.command("SELECT count() FROM sanlens.metrics") - before
        if rows >= expected:
            break
        time.sleep(1)
    print(f"==> {sent} Telegraf lines ({expected} samples) sent, {rows} samples in sanlens.metrics", flush=True)
    print("==> building the dbt marts", flush=True)
    cli.dbt("build", "--quiet")
    result = client.query("""
        SELECT host, disk, round(avg(value) * 1e6) AS avg_read_us, count() AS samples
        FROM sanlens.metrics WHERE metric = 'win_disk.Avg._Disk_sec/Read'
        GROUP BY host, disk ORDER BY host, disk LIMIT 10""")
    print("\nHost read latency (Perfmon Avg. Disk sec/Read):")
    cli.print_rows(result.column_names, result.result_rows)
    print("\nWhat to look at next:\n"
          "  ./sanlens sql \"SELECT * FROM sanlens_marts.metric_series_summary LIMIT 20\"\n"
          "  ./sanlens status            (health of every component)\n"
          "  ./sanlens logs flink        (the normalize job)\n"
          "  ./sanlens down              (stop everything)")
    return 0 if rows >= expected else 1
