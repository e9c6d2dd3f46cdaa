"""The fleet in motion: every interval, the I/O each host offers, where its latency comes from, and the
cumulative counters each source keeps (which restarts reset). It counts I/Os per interval; it never
makes one record per I/O, so large fleets stay cheap."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ingest import buckets

from . import latency
from .scenario import ROLES, Host, Scenario, Volume, Workload

LOG_WRITE_SHARE = 0.3  # of a host's writes: transaction log; the rest (and all reads) hit data files
VOLUME_MIB = 1024 * 1024  # 1 TiB volumes
BB_CREDIT_TICK_S = 2.5e-6  # Brocade counts time at zero transmit credit in 2.5 us units
# SQL Server's batch requests/s once auto-tiering has moved a volume's hot data to Tier 0: +60 % in the
# StoreVirtual AO reference run (docs/domain.md), reached as the Tier 0 share reaches its target
TIERING_BATCH_GAIN = 0.6
# SQL Server's CPU goes with the work it does, its batches: a host whose I/O waits less does more batches and
# idles less (a storage replacement study: 4x the CPU beside 95 % less read latency). % Processor Time points
# per batch request/s above the host's base: a host at 8,000 IOPS (1,000 batches/s) runs at its base plus 40.
CPU_PER_BATCH_REQUEST = 0.04
IOS_PER_BATCH = 8
# Auto-tiering directs new writes (new pages) to Tier 0 and keeps a small reserve of it free for them (the StoreVirtual
# AO study, docs/domain.md "Tiers"): of an AO volume's writes NEW_WRITE_SHARE allocate new pages; they land in Tier 0
# while the array's Tier 0 has its reserve free, fewer as the reserve fills, and all in Tier 1 once Tier 0 is full.
NEW_WRITE_SHARE = 0.1
TIER0_RESERVE = 0.1  # of Tier 0's capacity: past 90 % full, new writes begin to spill to Tier 1
TIERS = (0, 1)


@dataclass
class DiskFigures:
    """One of a host's disks (its data or its log volume) in one interval: the I/O it carried and its own volume's
    service times."""

    read_iops: float = 0.0
    write_iops: float = 0.0
    array_read_us: float = 0.0
    array_write_us: float = 0.0


@dataclass
class HostFigures:
    """What one host saw in one interval: the truth the pipeline has to find."""

    read_iops: float = 0.0
    write_iops: float = 0.0
    mbps: float = 0.0
    queueing_us: float = 0.0
    transport_us: float = 0.0  # what the transport adds beyond FC's: iSCSI's TCP/IP stacks (latency.TRANSPORT_US)
    fabric_us: float = 0.0
    outstanding: float = 0.0
    cpu_percent: float = 0.0  # % Processor Time
    transactions_per_s: float = 0.0  # SQL Server's Transactions/sec, its databases summed
    disks: dict[str, DiskFigures] = field(default_factory=lambda: {role: DiskFigures() for role in ROLES})

    @property
    def beyond_array_us(self) -> float:
        """What an I/O spends outside the array, on either disk: host queueing (the host stack in it), the
        transport's stacks and the fabric."""
        return self.queueing_us + self.transport_us + self.fabric_us

    def disk_us(self, role: str, direction: str) -> float:
        """The latency the host measures on one disk and direction (Perfmon's Avg. Disk sec/Read|Write): the way
        there and back plus its own volume's service time; 0 where the disk did no I/O that way (a log disk's
        reads), as Perfmon reports it."""
        disk = self.disks[role]
        if not getattr(disk, f"{direction}_iops"):
            return 0.0
        return self.beyond_array_us + getattr(disk, f"array_{direction}_us")

    def _across_disks(self, direction: str) -> float:
        """The array's service time of the host's I/Os of one direction, its disks weighted by their I/Os."""
        pairs = [(getattr(d, f"{direction}_iops"), getattr(d, f"array_{direction}_us")) for d in self.disks.values()]
        ios = sum(n for n, _ in pairs)
        return sum(n * us for n, us in pairs) / ios if ios else 0.0

    @property
    def array_read_us(self) -> float:
        return self._across_disks("read")

    @property
    def array_write_us(self) -> float:
        return self._across_disks("write")

    @property
    def read_us(self) -> float:
        """The host's read latency over both disks, I/O-weighted."""
        return self.beyond_array_us + self.array_read_us

    @property
    def write_us(self) -> float:
        """The host's write latency over both disks, I/O-weighted."""
        return self.beyond_array_us + self.array_write_us


@dataclass
class VolumeFigures:
    reads: int = 0  # I/Os in the last interval
    writes: int = 0
    read_kb: float = 0.0
    write_kb: float = 0.0
    read_ms: float = 0.0  # mean service time in the last interval
    write_ms: float = 0.0
    rhist: np.ndarray = field(default_factory=lambda: np.zeros(buckets.COUNT, dtype=np.int64))  # cumulative
    whist: np.ndarray = field(default_factory=lambda: np.zeros(buckets.COUNT, dtype=np.int64))
    page_moves_up: int = 0
    page_moves_down: int = 0
    interval_counts: dict = field(default_factory=dict)  # direction -> this interval's I/Os per bucket
    tier_ios: dict = field(default_factory=dict)  # (tier, direction) -> I/Os in the last interval (hybrid arrays)
    tier_ms: dict = field(default_factory=dict)  # (tier, direction) -> mean service time in the last interval


class Fleet:
    def __init__(self, scenario: Scenario, start_s: float):
        self.s, self.start_s = scenario, start_s
        self.rng = np.random.default_rng(scenario.seed)
        self.t = start_s  # time of the last completed interval
        self.firmware = {a.name: a.firmware for a in scenario.arrays.values()}
        self.hosts = {name: HostFigures() for name in scenario.hosts}
        self.volumes = {v.name: VolumeFigures() for a in scenario.arrays.values() for v in a.volumes}
        self.sql = {name: defaultdict(float) for name in scenario.hosts}  # cumulative DMV counters
        self.hba_frames = defaultdict(int)
        self.ports = defaultdict(lambda: defaultdict(int))  # (switch, port) -> counters
        self.tiering = {}  # volume -> (start, target, tau)
        self.tier0_used_mib = defaultdict(int)  # hybrid array -> its volumes' MiB on Tier 0 at the last interval
        self.truth_histograms = defaultdict(lambda: np.zeros(buckets.COUNT, dtype=np.int64))

    # -- events --------------------------------------------------------------------------------
    def _active(self, event: dict, rel: float) -> bool:
        return event["at"] <= rel < event.get("until", math.inf)

    def _apply_events(self, rel: float, dt: float) -> None:
        for event in self.s.events:
            starts_now = event["at"] <= rel < event["at"] + dt
            kind = event["type"]
            if kind == "firmware_upgrade":
                names = self.s.select_arrays(event["arrays"])
                waves, every = int(event.get("waves", 1)), float(event.get("every", 0))
                share = float(event.get("share", 1.0))
                upgraded = names[: round(len(names) * share)]
                for w in range(waves):
                    if event["at"] + w * every <= rel < event["at"] + w * every + dt:
                        wave = upgraded[w::waves]
                        for name in wave:
                            self.firmware[name] = str(event["to"])
            elif starts_now:
                if kind == "auto_tiering":
                    self.tiering[event["volume"]] = (
                        rel,
                        float(event.get("target_tier0", 0.22)),
                        float(event.get("time_constant_s", 600)),
                    )
                elif kind == "instance_restart":
                    self.sql[event["host"]].clear()
                elif kind == "array_restart":
                    for v in self.s.arrays[event["array"]].volumes:
                        fig = self.volumes[v.name]
                        fig.rhist[:], fig.whist[:], fig.page_moves_up, fig.page_moves_down = 0, 0, 0, 0

    def _offered(self, host: Host, rel: float) -> list[Workload]:
        loads = list(host.workloads)
        for e in self.s.events:
            if e.get("host") != host.name:
                continue
            if e["type"] == "workload_added":
                every, count = float(e.get("every", 0)), int(e.get("count", 1))
                added = sum(1 for k in range(count) if rel >= e["at"] + k * every)
                loads += [Workload(e["workload"], float(e["iops"]))] * added
            elif e["type"] == "hba_saturation" and self._active(e, rel):
                loads.append(Workload(e.get("workload", "datamining"), float(e.get("iops", 3200))))
        return loads

    def slow_drain_us(self, switch: str, port: int, rel: float) -> float:
        return sum(
            float(e.get("delay_us", 1000))
            for e in self.s.events
            if e["type"] == "slow_drain" and e["switch"] == switch and int(e["port"]) == port and self._active(e, rel)
        )

    def api_fault(self, component: str) -> str | None:
        """What an api_fault event makes the array's or switch's REST API answer now, or None."""
        rel = self.t - self.start_s
        faults = [e for e in self.s.events if e["type"] == "api_fault" and self._active(e, rel)]
        return next((e["fault"] for e in faults if component in (e.get("array"), e.get("switch"))), None)

    def tiering_progress(self, volume: str, rel: float) -> float:
        """How far auto-tiering has moved the volume towards its target share: 0 before, 1 at the target."""
        if volume not in self.tiering:
            return 0.0
        since, _, tau = self.tiering[volume]
        return 1 - math.exp(-(rel - since) / tau)

    def tier0_share(self, volume: Volume, rel: float) -> float:
        """The volume's Tier 0 share of capacity, the array's noise included."""
        base = self.s.arrays[volume.array].tier0_share
        share = base
        if volume.name in self.tiering:
            share = base + (self.tiering[volume.name][1] - base) * self.tiering_progress(volume.name, rel)
        noise = self.s.arrays[volume.array].tier0_noise
        return min(max(share + self.rng.normal(0, noise), 0.0), 1.0) if noise else share

    def tier0_fill(self, array: str) -> float:
        """The share of the array's Tier 0 capacity its volumes use."""
        return self.tier0_used_mib[array] / (self.s.arrays[array].tier0_capacity_gib * 1024)

    def tier0_write_share(self, volume: Volume, tier0_io_share: float) -> float:
        """The share of the volume's writes that land in Tier 0: those to its Tier 0 pages, and on a volume auto-tiering
        acts on (AO permitted) its new writes while the array's Tier 0 reserve has room for them."""
        if volume.tier0_share <= 0 and volume.name not in self.tiering:
            return tier0_io_share
        room = min(max((1 - self.tier0_fill(volume.array)) / TIER0_RESERVE, 0.0), 1.0)
        return (1 - NEW_WRITE_SHARE) * tier0_io_share + NEW_WRITE_SHARE * room

    # -- one interval --------------------------------------------------------------------------
    def step(self) -> float:
        dt = self.s.interval_s
        rel = self.t - self.start_s
        self._apply_events(rel, dt)
        array_load = defaultdict(float)
        offered = {}
        for host in self.s.hosts.values():
            offered[host.name] = self._offered(host, rel)
            array_load[host.array] += sum(w.iops for w in offered[host.name])
        for host in self.s.hosts.values():
            loads = self._served(offered[host.name], self.s.arrays[host.array].capacity_iops, array_load[host.array])
            self._host_interval(host, loads, array_load[host.array], rel, dt)
        for array in self.s.arrays.values():
            if array.media == "hybrid":
                self.tier0_used_mib[array.name] = sum(round(VOLUME_MIB * v.tier0_share) for v in array.volumes)
        self.t += dt
        return self.t

    @staticmethod
    def _served(loads: list[Workload], capacity_iops: float, offered_iops: float) -> list[Workload]:
        """An array saturates: past its capacity it serves each workload its part of the capacity, no more."""
        if offered_iops <= capacity_iops:
            return loads
        return [Workload(w.kind, w.iops * capacity_iops / offered_iops) for w in loads]

    def _host_interval(self, host: Host, loads: list[Workload], array_iops: float, rel: float, dt: float) -> None:
        array = self.s.arrays[host.array]
        iops = sum(w.iops for w in loads)
        read_iops = sum(w.iops * w.read_share for w in loads)
        write_iops = iops - read_iops
        mbps = sum(w.iops * w.io_kb for w in loads) / 1024
        io_kb = mbps * 1024 / iops if iops else 8.0
        util = array_iops / array.capacity_iops
        fw = self.firmware[array.name]
        fig = self.hosts[host.name]
        for volume in array.volumes:
            if volume.host != host.name:
                continue
            volume.tier0_share = self.tier0_share(volume, rel)
            share = latency.tier0_io_share(volume.tier0_share)
            tier0_shares = {"read": share, "write": self.tier0_write_share(volume, share)}
            v, disk = self.volumes[volume.name], fig.disks[volume.role]
            disk.read_iops = read_iops if volume.role == "data" else 0.0
            disk.write_iops = write_iops * ((1 - LOG_WRITE_SHARE) if volume.role == "data" else LOG_WRITE_SHARE)
            v.reads, v.writes = int(self.rng.poisson(disk.read_iops * dt)), int(self.rng.poisson(disk.write_iops * dt))
            v.read_kb, v.write_kb = v.reads * io_kb, v.writes * io_kb
            for direction, ios, hist in (("read", v.reads, v.rhist), ("write", v.writes, v.whist)):
                mix = latency.service_time(array.media, fw, direction, tier0_shares[direction], util)
                if array.media == "hybrid":
                    counts = self._tier_interval(v, direction, ios, tier0_shares[direction], fw, util)
                else:
                    counts = latency.sample_histogram(self.rng, mix, ios)
                hist += counts
                v.interval_counts[direction] = counts
                self.truth_histograms[(int((self.t + dt) // 3600 * 3600), array.name, fw, direction)] += (
                    counts  # hour of the sample
                )
                setattr(v, f"{direction}_ms", mix.mean_ms())
                setattr(disk, f"array_{direction}_us", mix.mean_ms() * 1000)
            if volume.name in self.tiering:
                moves = int(self.rng.poisson(max(volume.tier0_share, 0) * 50 * dt / 60))
                v.page_moves_up += moves
                v.page_moves_down += moves // 10
        slow = self.slow_drain_us(host.switch, host.switch_port, rel) + self.slow_drain_us(
            host.switch, host.array_port, rel
        )
        fig.read_iops, fig.write_iops, fig.mbps = read_iops, write_iops, mbps
        fig.fabric_us = latency.fabric_us(host.hops, host.distance_km, slow)
        fig.transport_us = latency.TRANSPORT_US[host.transport]
        # an I/O holds its slot in the host's queue while it crosses the transport's stacks too
        array_us = (fig.array_read_us * read_iops + fig.array_write_us * write_iops) / max(iops, 1)
        downstream = fig.transport_us + fig.fabric_us + array_us
        rho_outstanding = iops * downstream / 1e6 / host.queue_depth
        rho = max(mbps / host.hba_mbps, rho_outstanding)
        fig.queueing_us = latency.host_queueing_us(rho * host.queue_depth, host.queue_depth, downstream)
        fig.outstanding = min(host.queue_depth, iops * (downstream + fig.queueing_us) / 1e6)
        self._sql_counters(host, fig, dt, rel)
        frames = int(iops * dt * (1 + io_kb / 2))
        self.hba_frames[host.host_port] += frames
        for port in (host.switch_port, host.array_port):
            c = self.ports[(host.switch, port)]
            c["in-frames"] += frames // 2
            c["out-frames"] += frames - frames // 2
            c["in-words"] += int(mbps * dt * 1024 * 1024 / 8)
            c["out-words"] += int(mbps * dt * 1024 * 1024 / 8)
            delay = self.slow_drain_us(host.switch, port, rel)
            if delay:
                c["bb-credit-zero"] += int(min(delay / 2000, 0.9) * dt / BB_CREDIT_TICK_S)
                c["class3-out-discards"] += int(self.rng.poisson(delay / 500))

    def _tier_interval(
        self, v: VolumeFigures, direction: str, ios: int, tier0_io_share: float, fw: str, util: float
    ) -> np.ndarray:
        """A hybrid volume's I/Os of one direction split between its tiers, each tier's service times drawn from its
        own media: the volume's histogram is the two tiers' added."""
        tier0 = int(self.rng.binomial(ios, tier0_io_share))
        counts = np.zeros(buckets.COUNT, dtype=np.int64)
        for tier, tier_ios in zip(TIERS, (tier0, ios - tier0), strict=True):
            mix = latency.tier_service_time(tier, fw, direction, util)
            counts += latency.sample_histogram(self.rng, mix, tier_ios)
            v.tier_ios[(tier, direction)], v.tier_ms[(tier, direction)] = tier_ios, mix.mean_ms()
        return counts

    def _sql_counters(self, host: Host, fig: HostFigures, dt: float, rel: float) -> None:
        c = self.sql[host.name]
        n = len(host.databases)
        fig.transactions_per_s = 0.0
        throughput = 1.0
        for e in self.s.events:
            if e["type"] == "auto_tiering" and e["volume"] in (f"{host.name}_data", f"{host.name}_log"):
                throughput = 1 + TIERING_BATCH_GAIN * self.tiering_progress(e["volume"], rel)
        data, log = fig.disks["data"], fig.disks["log"]
        for db in host.databases:
            reads = int(self.rng.poisson(data.read_iops * dt / n))
            data_writes = int(self.rng.poisson(data.write_iops * dt / n))
            log_writes = int(self.rng.poisson(log.write_iops * dt / n))
            for file, role, r, w in ((f"{db}", "data", reads, data_writes), (f"{db}_log", "log", 0, log_writes)):
                c[(file, "reads")] += r
                c[(file, "writes")] += w
                c[(file, "read_bytes")] += r * 8192
                c[(file, "write_bytes")] += w * 8192
                # a file's stalls are its disk's latency: the data file's the D: disk's, the log's the L: disk's
                c[(file, "read_latency_ms")] += round(r * fig.disk_us(role, "read") / 1000)
                c[(file, "write_latency_ms")] += round(w * fig.disk_us(role, "write") / 1000)
            transactions = int(self.rng.poisson((fig.read_iops + fig.write_iops) * dt / 20 / n * throughput))
            c[(db, "Transactions/sec")] += transactions
            fig.transactions_per_s += transactions / dt
        batches_per_s = (fig.read_iops + fig.write_iops) / IOS_PER_BATCH * throughput
        c[("", "Batch Requests/sec")] += int(self.rng.poisson(batches_per_s * dt))
        fig.cpu_percent = min(100.0, host.cpu_base_percent + batches_per_s * CPU_PER_BATCH_REQUEST)
        c[("", "PAGEIOLATCH_SH")] += round(data.read_iops * dt * fig.disk_us("data", "read") / 1000 * 0.05)
        c[("", "WRITELOG")] += round(log.write_iops * dt * fig.disk_us("log", "write") / 1000)
