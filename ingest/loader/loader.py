"""loader: the pipeline's output topics -> ClickHouse tables, in batches, at least once and idempotent.

Each message is a JSON object whose keys are the target table's columns (a record's samples: the columns
they share, and each sample's own in a list, which ClickHouse unnests: LOADED_THROUGH). The loader appends the
message's Kafka partition and offset (columns kafka_partition, kafka_offset), inserts the batch with
clickhouse-connect, and only then commits the offsets in Kafka. On (re)assignment it resumes each
partition after the highest offset the table already holds, so a batch inserted just before a crash
but never committed is not inserted again.

    python ingest/loader/loader.py [--route telemetry.samples=sanlens.metrics ...] [--batch 100000]
"""

from __future__ import annotations

import argparse
import json
import queue
import signal
import sys
import threading
import time
from collections import defaultdict
from contextlib import nullcontext
from datetime import UTC, datetime

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from clickhouse.client import connect
from ingest import kafka_access, settings, topics
from ingest.loader import arrow, rollups

DEFAULT_ROUTES = {
    topics.SAMPLES: "sanlens.metrics",
    topics.DEADLETTER: "sanlens.deadletter",
    topics.ACCOUNTING: "sanlens.pipeline_accounting",
    topics.TOPOLOGY: "sanlens.topology",
    topics.HISTOGRAMS: "sanlens.service_time_hist_10s",
    topics.BREAKDOWN: "sanlens.path_latency",
    topics.INCIDENTS: "sanlens.path_incidents",
    topics.TIER_EPISODES: "sanlens.tier_episodes",
    topics.SLO_WINDOWS: "sanlens.slo_windows",
    topics.SLO_ALERTS: "sanlens.slo_alerts",
}
# Tables whose messages carry several rows each (docs/contract.md): the loader inserts the messages as they are
# into a Null table of their shape, whose materialized view writes the rows (clickhouse/migrations/0014, 0019).
# The table itself stays the offset store.
LOADED_THROUGH = {
    "sanlens.metrics": "sanlens.metrics_messages",
    "sanlens.service_time_hist_10s": "sanlens.service_time_hist_messages",
}
# A field no column takes is refused, not skipped (ClickHouse's default): a field renamed on the producer's side
# would vanish without a word. The message goes to the dead letters as "unknown field", naming it.
INSERT_SETTINGS = {"date_time_input_format": "best_effort", "input_format_skip_unknown_fields": 0}
# Parsed in one thread: two thirds of the CPU of parallel parsing for a batch of messages (docs/benchmarks.md).
THROUGH_SETTINGS = {**INSERT_SETTINGS, "input_format_parallel_parsing": 0}


def line(msg) -> bytes:
    """The message as one JSONEachRow line with its Kafka position appended."""
    value = (msg.value() or b"").rstrip()
    if not value.startswith(b"{") or not value.endswith(b"}"):
        raise ValueError("not a JSON object")
    return value[:-1] + b',"kafka_partition":%d,"kafka_offset":%d}' % (msg.partition(), msg.offset())


def unknown_fields(msg, known: set[str]) -> list[str]:
    """The message's top-level fields that are not in `known` (none when it is no JSON)."""
    try:
        return sorted(set(json.loads(msg.value())) - known)
    except ValueError:
        return []


# A refresh of the rollups reads back the periods that received rows: live it takes a fraction of a second,
# during a backfill tens of seconds (a 200-array backfill, when the embedded server ran one query at a time:
# 81% of the loader's time went to refreshes every 10 s, and its inserts waited). So the next refresh
# waits at least this many times as long as the last one took: rollups take at most a fifth of ClickHouse's
# time, and catch up in one refresh when the backlog is loaded. They run in a thread of their own, beside the
# loading: in the loop, at 600 arrays × 10 s, the samples waited up to 11 s in 34 for the refreshes.
ROLLUP_GAP = 4
# The Flink jobs write in transactions, each ending in a commit marker that takes an offset but is never
# delivered: librdkafka stores the offset past a marker it reads, and an idle loader commits it, or its
# group would lag by one message per partition for ever.
IDLE_COMMIT_S = 5.0


class Loader:
    def __init__(
        self,
        kafka: str,
        ch_url: str,
        routes: dict[str, str],
        group: str,
        batch: int,
        linger: float,
        rollup_every: float = 10.0,
        kafka_user: str = kafka_access.LOADER,
    ):
        self.routes, self.batch, self.linger = routes, batch, linger
        self.rollup_every = rollup_every if f"sanlens.{rollups.BASE}" in routes.values() else 0
        self.ch_url, self.ch = ch_url, connect(ch_url)
        # server time the last rollup started: rows loaded later are rolled up next
        self.rolled_up_since = rollups.last_refresh(self.ch) if self.rollup_every else None
        self.columns = {table: self._columns(table) for table in routes.values()}
        self.arrow = {table: arrow.Target(cols) for table, cols in self.columns.items() if table not in LOADED_THROUGH}
        self.consumer = Consumer(
            {
                **settings.kafka_client(kafka_user, kafka),
                "group.id": group,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",  # the jobs' transactions once their checkpoint commits them
                "auto.offset.reset": "earliest",
                "enable.partition.eof": False,
                "log_level": 3,
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 2000,
            }
        )
        self.producer = Producer({**settings.kafka_client(kafka_user, kafka), "linger.ms": 50, "log_level": 3})
        self.loaded = self.dead = 0
        # Held by an insert into a table a refresh reads while it runs, and by a refresh while it takes its start
        # time: every row loaded before that time is in the table when the refresh reads it, and every row
        # loaded later is rolled up by the next refresh (its loaded_at is later).
        self.rollup_reads = threading.Lock()
        self.rolling_up_s = 0.0  # seconds the refreshes took since the last report
        self.failed: BaseException | None = None  # in the rollups' or the inserts' thread
        # Read batches waiting for their insert: one at a time, so the reading stays a batch ahead at most.
        self.batches: queue.Queue = queue.Queue(maxsize=1)
        self.inserted: queue.SimpleQueue = queue.SimpleQueue()  # per batch inserted, its offsets to commit
        self.loading_s = 0.0  # seconds the inserts took since the last report

    def _columns(self, table: str) -> list[tuple[str, str]]:
        """The table's (name, type) columns a message may set."""
        rows = self.ch.query(f"DESCRIBE TABLE {table}").result_rows
        return [
            (r[0], r[1]) for r in rows if r[2] not in ("MATERIALIZED", "ALIAS", "EPHEMERAL") and r[0] != "loaded_at"
        ]

    def on_assign(self, consumer, partitions):
        """Resume after what ClickHouse already holds, or after the committed offset if that is further."""
        self.wait_for_inserts()  # what was read before is in the table first
        committed = {(tp.topic, tp.partition): tp.offset for tp in consumer.committed(partitions, timeout=30)}
        for tp in partitions:
            held = self.ch.command(
                f"SELECT max(kafka_offset) + 1, count() FROM {self.routes[tp.topic]} "
                f"WHERE kafka_partition = {tp.partition}"
            )
            next_in_table = int(held[0]) if int(held[1]) else -1
            start = max(committed.get((tp.topic, tp.partition), -1), next_in_table)
            tp.offset = start if start >= 0 else tp.offset
        consumer.assign(partitions)

    def run(self) -> None:
        """Reads Kafka in this thread and inserts in another: the next batch is read and made into lines while
        ClickHouse takes the last one (at 1,000 arrays the loader's own work was a fifth of its time)."""
        self.consumer.subscribe(list(self.routes), on_assign=self.on_assign)
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
        signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
        last_report = last_commit = time.monotonic()
        stop_rollups = threading.Event()
        if self.rollup_every:
            threading.Thread(target=self.roll_up_every, args=(stop_rollups,), name="rollups", daemon=True).start()
        inserting = threading.Thread(target=self.insert_batches, name="inserts", daemon=True)
        inserting.start()
        while not stopping:
            if self.failed:
                raise self.failed  # ClickHouse unreachable: crash and resume, as a failed insert does
            messages = self.consumer.consume(self.batch, timeout=self.linger)
            self.commit_inserted()
            if messages:
                self.hand_over(self.prepare(messages))
                last_commit = time.monotonic()
            elif time.monotonic() - last_commit > IDLE_COMMIT_S and not self.batches.unfinished_tasks:
                self.commit(None)
                last_commit = time.monotonic()
            if time.monotonic() - last_report > 30:
                elapsed = time.monotonic() - last_report
                print(
                    f"loaded {self.loaded} messages, {self.dead} dead letters; last {elapsed:.0f} s: loading "
                    f"{self.loading_s:.0f} s, rolling up {self.rolling_up_s:.0f} s",
                    flush=True,
                )
                last_report, self.loading_s, self.rolling_up_s = time.monotonic(), 0.0, 0.0
        self.hand_over(None)
        inserting.join()
        self.commit_inserted()
        stop_rollups.set()
        self.consumer.close()
        self.producer.flush(10)

    def insert_batches(self) -> None:
        """The inserts' thread: each batch into its tables, then its offsets to commit to the reading thread (a
        consumer's synchronous commit from another thread waited for as long as its reading thread read)."""
        while True:
            batch = self.batches.get()
            try:
                if batch is None:
                    return
                t0 = time.monotonic()
                self.load(*batch)
                self.loading_s += time.monotonic() - t0
            except BaseException as exc:  # the reading thread raises it
                self.failed = exc
                return
            finally:
                self.batches.task_done()

    def hand_over(self, batch) -> None:
        """`batch` to the inserts' thread, once it has taken the last one."""
        while True:
            try:
                return self.batches.put(batch, timeout=1)
            except queue.Full:
                if self.failed:
                    raise self.failed from None

    def wait_for_inserts(self) -> None:
        while self.batches.unfinished_tasks and not self.failed:
            time.sleep(0.05)

    def roll_up_every(self, stop: threading.Event) -> None:
        """The rollups' thread: a refresh every `rollup_every` seconds, or ROLLUP_GAP times as long as the last one
        took; on its own ClickHouse client (a client runs one query at a time)."""
        ch, gap = connect(self.ch_url), 0.0
        try:
            while not stop.wait(max(self.rollup_every, gap)):
                t0 = time.monotonic()
                self.roll_up(ch)
                took = time.monotonic() - t0
                self.rolling_up_s += took
                gap = ROLLUP_GAP * took
        except Exception as exc:  # the reading thread raises it
            self.failed = exc

    def roll_up(self, ch) -> None:
        with self.rollup_reads:
            started = ch.command("SELECT now64(3)")
        rollups.refresh(ch, self.rolled_up_since)
        self.rolled_up_since = started

    def prepare(self, messages) -> tuple[dict, dict]:
        """A batch read: per table its lines, the messages that are no JSON object (to dead-letter), the messages
        themselves (to insert one by one if ClickHouse refuses the batch); and per partition the offset to commit."""
        by_table, positions = defaultdict(lambda: ([], [], [])), {}
        for msg in messages:
            if msg.error():
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    print(f"kafka error: {msg.error()}", file=sys.stderr, flush=True)
                continue
            lines, dead, batch = by_table[self.routes[msg.topic()]]
            batch.append(msg)
            try:
                lines.append(line(msg))
            except ValueError as exc:
                dead.append((msg, str(exc), ""))
            positions[msg.topic(), msg.partition()] = msg.offset() + 1
        return by_table, positions

    def load(self, by_table: dict, positions: dict) -> None:
        for table, (lines, dead, batch) in by_table.items():
            with self.rollup_reads if table in rollups.READS else nullcontext():
                self.insert(table, lines, dead, batch)
        self.inserted.put(positions)

    def commit_inserted(self) -> None:
        """The offsets after the batches inserted since the last call."""
        positions = {}
        while not self.inserted.empty():
            positions.update(self.inserted.get())
        if positions:
            self.commit([TopicPartition(topic, partition, offset) for (topic, partition), offset in positions.items()])

    def commit(self, offsets: list[TopicPartition] | None) -> None:
        """`offsets`, or (None) the positions read so far: only when no batch is in flight."""
        try:
            if offsets is None:
                self.consumer.commit(asynchronous=False)
            else:
                self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError._NO_OFFSET:  # nothing new to commit
                raise

    def insert(self, table: str, lines: list[bytes], dead: list, batch) -> None:
        if lines:
            try:
                self._insert(table, lines)
            except Exception as exc:
                if "Code:" not in str(exc):
                    raise  # ClickHouse unreachable: crash and resume from the table's offsets
                self._isolate(table, batch, dead)
        for msg, reason, detail in dead:
            self.producer.produce(
                topics.DEADLETTER,
                json.dumps(
                    {
                        "ts": datetime.now(UTC).isoformat(),
                        "stage": "loader",
                        "reason": reason,
                        "detail": detail,
                        "topic": msg.topic(),
                        "partition": msg.partition(),
                        "offset": msg.offset(),
                        "payload": (msg.value() or b"").decode("utf-8", "replace"),
                    }
                ).encode(),
                key=msg.key(),
            )
        self.producer.flush(30)
        self.dead += len(dead)

    def _insert(self, table: str, lines: list[bytes]) -> None:
        """Columnar when the batch parses as the table's Arrow schema; else as JSONEachRow, whose parser
        is more lenient (best-effort dates) and names what it refuses. A table loaded through another: its
        messages as JSONEachRow, which ClickHouse parses faster than pyarrow does messages of that shape."""
        if through := LOADED_THROUGH.get(table):
            self.ch.raw_insert(through, None, b"\n".join(lines), settings=THROUGH_SETTINGS, fmt="JSONEachRow")
        else:
            try:
                self.ch.insert_arrow(table, self.arrow[table].table(lines), settings=INSERT_SETTINGS)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                names = [name for name, _ in self.columns[table]]
                self.ch.raw_insert(table, names, b"\n".join(lines), settings=INSERT_SETTINGS, fmt="JSONEachRow")
        self.loaded += len(lines)

    def _isolate(self, table: str, batch, dead: list) -> None:
        """A batch ClickHouse refused: insert message by message and dead-letter the ones it refuses, those with a
        field no column takes as "unknown field" with the fields' names."""
        known = {name for name, _ in self._columns(LOADED_THROUGH.get(table, table))}
        for msg in batch:
            if any(m is msg for m, *_ in dead):
                continue
            try:
                self._insert(table, [line(msg)])
            except Exception as exc:
                if "Code:" not in str(exc):
                    raise
                if unknown := unknown_fields(msg, known):
                    dead.append((msg, "unknown field", ", ".join(unknown)))
                else:
                    dead.append((msg, "rejected by ClickHouse", str(exc).splitlines()[0][:300]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kafka", default=settings.KAFKA_BOOTSTRAP)
    ap.add_argument("--clickhouse", default=settings.CLICKHOUSE_URL)
    ap.add_argument(
        "--route",
        action="append",
        metavar="TOPIC=TABLE",
        help="default: " + ", ".join(f"{t}={d}" for t, d in DEFAULT_ROUTES.items()),
    )
    ap.add_argument("--group", default="sanlens-loader")
    ap.add_argument(
        "--kafka-user",
        help="the Kafka principal (default: loader, ingest/kafka_access.py; admin with --route or another --group)",
    )
    ap.add_argument("--batch", type=int, default=100000, help="max messages per insert (each is a part to merge)")
    ap.add_argument("--linger", type=float, default=1.0, help="seconds to wait for a batch to fill")
    ap.add_argument(
        "--rollup-every",
        type=float,
        default=10.0,
        help="seconds between histogram rollup refreshes (0: never; see rollups.py)",
    )
    args = ap.parse_args()
    routes = dict(r.split("=", 1) for r in args.route) if args.route else DEFAULT_ROUTES
    print(f"loading {', '.join(f'{t} -> {d}' for t, d in routes.items())}", flush=True)
    user = args.kafka_user or (
        kafka_access.LOADER if args.group == "sanlens-loader" and not args.route else settings.KAFKA_ADMIN
    )
    Loader(args.kafka, args.clickhouse, routes, args.group, args.batch, args.linger, args.rollup_every, user).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
