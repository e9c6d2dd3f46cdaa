"""Playing a scenario: in real time (or accelerated) through Telegraf, or as a backfill straight to Kafka.

Real time: the arrays' and switches' endpoints are served for Telegraf to poll; host metrics go to
Telegraf's socket listener in line protocol. Accelerated (--speed N): simulated time runs N times
faster and ends at "now", so every timestamp is in the past. Backfill: the same fleet for the same
span, produced as fast as possible to telemetry.metrics in the JSON Telegraf would have produced.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer

from ingest import kafka_access, settings, topics

from . import formats
from .fleet import Fleet
from .scenario import Scenario
from .truth import Truth


class Run:
    """A scenario being played; `progress` is called after every interval with (interval, records sent)."""

    def __init__(
        self,
        scenario: Scenario,
        truth_dir: Path,
        kafka: str,
        duration_s: float | None = None,
        speed: float = 1.0,
        backfill: bool = False,
        topic: str = topics.METRICS,
        start_s: float | None = None,
        kafka_user: str | None = None,
    ):
        """`start_s` sets a backfill's clock (tests/benchmarks/bench_install_base.py makes its fleet's intervals
        ahead of their time, to send each when it ends). It produces as the agents' Kafka principal (it stands in
        for them), or as admin into a topic of its own (`topic`: benchmarks), or as `kafka_user`."""
        self.s, self.speed, self.topic = scenario, speed, topic
        self.duration = duration_s or scenario.duration_s
        if backfill and start_s is not None:
            self.start_s = float(start_s)
        elif backfill:
            # The last whole slot of `duration` before now: a backfill replayed in the same slot sends the
            # same samples again (the pipeline drops them as duplicates), and one played later does not
            # interleave its firmware timeline with the earlier one's.
            slot = max(int(self.duration), 1)
            self.start_s = float(int(time.time()) // slot * slot - slot)
        else:
            self.start_s = float(int(time.time() - self.duration + self.duration / speed))  # whole seconds
        self.made_at = self.start_s + self.duration - self.duration / speed  # start_s on the wall (live; same at 1x)
        self.fleet = Fleet(scenario, self.start_s)
        self.truth = Truth(truth_dir, self.fleet)
        self.lock = threading.Lock()
        options = {"linger.ms": 50, "compression.type": "lz4", "queue.buffering.max.messages": 1000000, "log_level": 3}
        agents, inventory = (kafka_access.AGENTS, kafka_access.INVENTORY) if topic == topics.METRICS else (None, None)
        self.producer = Producer(
            {**settings.kafka_client(kafka_user or agents or settings.KAFKA_ADMIN, kafka), **options}
        )
        # the inventory as its own publisher sends it, not with the agents' password (ingest/kafka_access.py)
        self.topology_producer = Producer(
            {**settings.kafka_client(kafka_user or inventory or settings.KAFKA_ADMIN, kafka), **options}
        )
        self.sent = 0

    @property
    def intervals(self) -> int:
        return int(round(self.duration / self.s.interval_s))

    def publish_topology(self) -> None:
        for key, value in formats.topology(self.fleet):
            self.topology_producer.produce(topics.TOPOLOGY, json.dumps(value).encode(), key=key.encode())
        self.topology_producer.flush(30)
        self.published_firmware = dict(self.fleet.firmware)

    def step(self) -> None:
        """One interval; arrays whose firmware changed in it are published again to the inventory."""
        started = self.fleet.t
        self.fleet.step()
        self.truth.interval()
        for name, firmware in self.fleet.firmware.items():
            if self.published_firmware.get(name) != firmware:
                key, value = formats.array_record(self.fleet, name, started)
                self.topology_producer.produce(topics.TOPOLOGY, json.dumps(value).encode(), key=key.encode())
                self.published_firmware[name] = firmware

    def realtime(
        self,
        telegraf: tuple[str, int] | None,
        progress: Callable[[int, int], None] | None = None,
        stop: threading.Event | None = None,
    ) -> int:
        """Host metrics into Telegraf every interval (on the simulated clock); endpoints must be served.
        With `telegraf` None the hosts stay silent: only the arrays and switches are polled. The clock started
        when the run was made, which at --speed 1 is the wall clock: an interval is sent when it ends, however
        long the set-up in between (Telegraf's reload) took, unless that was longer than an interval: then the
        first one goes at once and the clock runs behind by the rest."""
        self.publish_topology()
        step = self.s.interval_s / self.speed
        wall0 = max(self.made_at, time.time() - step)
        with socket.create_connection(telegraf, timeout=10) if telegraf else contextlib.nullcontext() as sock:
            for i in range(self.intervals):
                if stop is not None and stop.is_set():
                    break
                # an interval's counters are sent when it ends, as an agent reports what it measured
                time.sleep(max(0.0, wall0 + (i + 1) * step - time.time()))
                with self.lock:
                    self.step()
                    ts_ns = int(self.fleet.t * 1e9)
                    metrics = [m for h in self.s.hosts.values() for m in formats.host_metrics(self.fleet, h)]
                if sock is not None:
                    lines = [formats.line(m, tags, fields, ts_ns) for m, tags, fields in metrics]
                    sock.sendall(("\n".join(lines) + "\n").encode())
                    for m, _, _ in metrics:
                        self.truth.count(m)
                    self.sent += len(lines)
                if progress:
                    progress(i + 1, self.sent)
        return self.sent

    def backfill(self, progress: Callable[[int, int], None] | None = None) -> int:
        self.publish_topology()
        # Telegraf's first poll finds the arrays' and switches' counters as they are at the start: the
        # baseline every later interval is a delta from.
        for measurement, tags, fields in formats.polled_metrics(self.fleet):
            self._produce(formats.telegraf_json(measurement, tags, fields, int(self.fleet.t * 1000)), tags["source"])
            self.truth.count(measurement)
            self.sent += 1
        for i in range(self.intervals):
            self.step()
            ts_ms = int(self.fleet.t * 1000)
            metrics = [m for h in self.s.hosts.values() for m in formats.host_metrics(self.fleet, h)]
            metrics += formats.polled_metrics(self.fleet)
            for measurement, tags, fields in metrics:
                self._produce(formats.telegraf_json(measurement, tags, fields, ts_ms), tags["source"])
                self.truth.count(measurement)
            self.sent += len(metrics)
            if progress:
                progress(i + 1, self.sent)
        self.producer.flush(120)
        self.topology_producer.flush(30)
        return self.sent

    def _produce(self, value: bytes, key: str) -> None:
        while True:
            try:
                self.producer.produce(self.topic, value, key=key.encode())
                return
            except BufferError:
                self.producer.poll(0.5)

    def close(self) -> None:
        self.producer.flush(60)
        self.topology_producer.flush(30)
        self.truth.close(self.start_s)
