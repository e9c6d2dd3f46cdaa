"""Ground truth: what a scenario planted and the true per-interval figures, for tests to compare
the pipeline's findings against. Written as JSON Lines under the run's truth folder:

    scenario.json     name, start/end (epoch s), interval, fleet size
    events.jsonl      one line per planted event: type, component, contributor, start, end, magnitude, affected
                      (a workload_added's magnitude: where its array's load curve bends and where it saturates)
    hosts.jsonl       per interval and host: IOPS, host latency and its contributors (us; the array's part and the
                      latency I/O-weighted over its disks), % Processor Time, SQL Server's transactions/s (its
                      databases summed), the HBA's queue depth, and its path's transport and multipath policy with what
                      the transport adds (transport_us: iSCSI's stacks); per disk (disks, by drive letter) its I/O
                      rates, the latency its Perfmon reports and its own volume's service time per direction
    volume_histograms.jsonl  (scenarios with `volume_truth: true`) per interval and volume: I/Os per bucket and
                      direction, and what its host measures beyond the volume's service time (us)
    volumes.jsonl     per interval and volume auto-tiering acts on: its Tier 0 share, array service time and the
                      latency its host measures on its disk (us), I/O-weighted over both directions
    tiers.jsonl       per interval: each hybrid volume's I/Os and mean service time per tier and direction
                      (kind volume), each hybrid array's Tier 0 use, capacity and fill (kind array)
    tier0_warnings.jsonl  per hybrid array whose Tier 0 filled past its new-write reserve (1 - TIER0_RESERVE, 90 %):
                      when it first did and when it was back below (null if never)
    histograms.jsonl  per hour, array, firmware and direction: I/Os per 3PAR bucket
    records.json      records emitted per measurement (host lines sent, array/switch documents served)
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

from . import latency
from .fleet import TIER0_RESERVE, TIERING_BATCH_GAIN, TIERS, Fleet, HostFigures
from .formats import DISKS

CONTRIBUTOR = {
    "firmware_upgrade": "array",
    "auto_tiering": "array",
    "slow_drain": "fabric",
    "hba_saturation": "host_queueing",
    "workload_added": "array",
    "instance_restart": "counter_reset",
    "array_restart": "counter_reset",
    "api_fault": "api",
}


class Truth:
    def __init__(self, folder: Path, fleet: Fleet):
        self.folder, self.fleet = folder, fleet
        folder.mkdir(parents=True, exist_ok=True)
        self.hosts = (folder / "hosts.jsonl").open("w")
        self.records = Counter()
        self.volumes = {v.name: v for a in fleet.s.arrays.values() for v in a.volumes}
        self.tiered = sorted({e["volume"] for e in fleet.s.events if e["type"] == "auto_tiering"})
        self.tiered_latency = {}  # volume -> [(t, the I/O-weighted latency its host sees on it, us)]
        self.volumes_out = (folder / "volumes.jsonl").open("w")
        self.histograms_out = (folder / "volume_histograms.jsonl").open("w") if fleet.s.volume_truth else None
        self.tiers_out = (folder / "tiers.jsonl").open("w")
        self.tier0_warnings = {}  # hybrid array -> {"passed": t, "below_again": t or None}

    def interval(self) -> None:
        t = self.fleet.t
        for name, f in self.fleet.hosts.items():
            self.hosts.write(
                json.dumps(
                    {
                        "t": t,
                        "host": name,
                        "read_iops": round(f.read_iops, 3),
                        "write_iops": round(f.write_iops, 3),
                        "read_us": round(f.read_us, 3),
                        "write_us": round(f.write_us, 3),
                        "queueing_us": round(f.queueing_us, 3),
                        "fabric_us": round(f.fabric_us, 3),
                        "array_read_us": round(f.array_read_us, 3),
                        "array_write_us": round(f.array_write_us, 3),
                        "outstanding": round(f.outstanding, 3),
                        "cpu_percent": round(f.cpu_percent, 3),
                        "transactions_per_s": round(f.transactions_per_s, 3),
                        "queue_depth": self.fleet.s.hosts[name].queue_depth,
                        "transport": self.fleet.s.hosts[name].transport,
                        "multipath_policy": self.fleet.s.hosts[name].multipath_policy,
                        "transport_us": f.transport_us,
                        "disks": {DISKS[role]: self._disk(f, role) for role in f.disks},
                    }
                )
                + "\n"
            )

        for name in self.tiered:
            volume, v = self.volumes[name], self.fleet.volumes[name]
            f, ios = self.fleet.hosts[volume.host], v.reads + v.writes
            if not ios:
                continue
            array_us = (v.reads * v.read_ms + v.writes * v.write_ms) * 1000 / ios
            host_us = (v.reads * f.disk_us(volume.role, "read") + v.writes * f.disk_us(volume.role, "write")) / ios
            self.tiered_latency.setdefault(name, []).append((t, host_us))
            figures = {"t": t, "array": volume.array, "volume": name, "host": volume.host}
            figures |= {"tier0_share": volume.tier0_share, "array_us": array_us, "host_us": host_us, "ios": ios}
            self.volumes_out.write(json.dumps(figures) + "\n")

        if self.histograms_out:
            self._volume_histograms(t)
        self._tiers(t)

    @staticmethod
    def _disk(f: HostFigures, role: str) -> dict:
        """One disk of a host as its Perfmon reports it: I/O rates, latencies (0 for a direction without I/O), and
        its own volume's service times."""
        d = f.disks[role]
        figures = {"read_iops": round(d.read_iops, 3), "write_iops": round(d.write_iops, 3)}
        for direction in ("read", "write"):
            figures[f"{direction}_us"] = round(f.disk_us(role, direction), 3)
            figures[f"array_{direction}_us"] = round(getattr(d, f"array_{direction}_us"), 3)
        return figures

    def _tiers(self, t: float) -> None:
        dt = self.fleet.s.interval_s
        for array in self.fleet.s.arrays.values():
            if array.media != "hybrid":
                continue
            for volume in array.volumes:
                v = self.fleet.volumes[volume.name]
                for tier in TIERS:
                    figures = {"kind": "volume", "t": t, "array": array.name, "volume": volume.name, "tier": tier}
                    for d in ("read", "write"):
                        figures[f"{d}_iops"] = v.tier_ios.get((tier, d), 0) / dt
                        figures[f"{d}_ms"] = v.tier_ms.get((tier, d), 0.0)
                    self.tiers_out.write(json.dumps(figures) + "\n")
            fill = self.fleet.tier0_fill(array.name)
            used, capacity = self.fleet.tier0_used_mib[array.name], array.tier0_capacity_gib * 1024
            line = {"kind": "array", "t": t, "array": array.name, "tier0_used_mib": used}
            self.tiers_out.write(json.dumps(line | {"tier0_capacity_mib": capacity, "tier0_fill": fill}) + "\n")
            warning = self.tier0_warnings.get(array.name)
            if fill >= 1 - TIER0_RESERVE and warning is None:
                self.tier0_warnings[array.name] = {"array": array.name, "passed": t, "below_again": None}
            elif fill < 1 - TIER0_RESERVE and warning and warning["below_again"] is None:
                warning["below_again"] = t

    def _volume_histograms(self, t: float) -> None:
        for name, volume in self.volumes.items():
            v, f = self.fleet.volumes[name], self.fleet.hosts[volume.host]
            line = {"t": t, "array": volume.array, "volume": name, "host": volume.host, "role": volume.role}
            for direction in ("read", "write"):
                counts = v.interval_counts.get(direction)
                if counts is None or not counts.sum():
                    continue
                line[direction] = {
                    "beyond_array_us": f.beyond_array_us,
                    "ios": {int(b): int(c) for b, c in enumerate(counts) if c},
                }
            self.histograms_out.write(json.dumps(line) + "\n")

    def time_to_effect_s(self, volume: str, start: float, end: float) -> float | None:
        """From `start` to the first interval whose latency on the volume is within 10 % of the level it
        reached (the mean of its last minute before `end`)."""
        series = [(t, us) for t, us in self.tiered_latency.get(volume, []) if start < t <= end]
        if len(series) < 6:
            return None
        level = sum(us for _, us in series[-6:]) / 6
        return next(t - start for t, us in series if abs(us - level) <= 0.1 * level)

    def count(self, measurement: str, n: int = 1) -> None:
        self.records[measurement] += n

    def close(self, start_s: float) -> None:
        self.hosts.close()
        self.volumes_out.close()
        self.tiers_out.close()
        if self.histograms_out:
            self.histograms_out.close()
        with (self.folder / "tier0_warnings.jsonl").open("w") as out:
            for warning in self.tier0_warnings.values():
                out.write(json.dumps(warning | {"level": 1 - TIER0_RESERVE}) + "\n")
        s = self.fleet.s
        (self.folder / "scenario.json").write_text(
            json.dumps(
                {
                    "name": s.name,
                    "start": start_s,
                    "end": self.fleet.t,
                    "interval_s": s.interval_s,
                    "arrays": len(s.arrays),
                    "hosts": len(s.hosts),
                    "switches": len(s.switches),
                    "volumes": sum(len(a.volumes) for a in s.arrays.values()),
                },
                indent=1,
            )
        )
        with (self.folder / "events.jsonl").open("w") as out:
            for event in s.events:
                out.write(json.dumps(self._event(event, start_s)) + "\n")
        with (self.folder / "histograms.jsonl").open("w") as out:
            for (hour, array, fw, direction), counts in sorted(self.fleet.truth_histograms.items()):
                out.write(
                    json.dumps(
                        {
                            "hour": hour,
                            "array": array,
                            "model": s.arrays[array].model,
                            "firmware": fw,
                            "direction": direction,
                            "counts": [int(c) for c in counts],
                        }
                    )
                    + "\n"
                )
        (self.folder / "records.json").write_text(json.dumps(dict(sorted(self.records.items())), indent=1))

    def _load_curve(self, e: dict) -> dict:
        """Where the array's load curve bends and where it saturates, in IOPS offered and in workloads added (the
        first that takes the offered load there; None if the event never does)."""
        s = self.fleet.s
        array = s.arrays[s.hosts[e["host"]].array]
        base = sum(w.iops for h in s.hosts.values() if h.array == array.name for w in h.workloads)
        knee = latency.knee_utilisation() * array.capacity_iops

        def workloads_to(iops: float) -> int | None:
            n = max(0, math.ceil((iops - base) / float(e["iops"])))
            return n if n <= int(e.get("count", 1)) else None

        return {
            "array": array.name,
            "base_iops": base,
            "capacity_iops": array.capacity_iops,
            "knee_iops": knee,
            "knee_utilisation": latency.knee_utilisation(),
            "knee_workloads": workloads_to(knee),
            "saturation_workloads": workloads_to(array.capacity_iops),
        }

    def _event(self, e: dict, start_s: float) -> dict:
        s, kind = self.fleet.s, e["type"]
        end = start_s + e["until"] if "until" in e else None
        out = {"type": kind, "contributor": CONTRIBUTOR[kind], "start": start_s + e["at"], "end": end}
        if kind == "firmware_upgrade":
            names = s.select_arrays(e["arrays"])
            upgraded = names[: round(len(names) * float(e.get("share", 1.0)))]
            waves, every = int(e.get("waves", 1)), float(e.get("every", 0))
            out.update(
                component="arrays",
                magnitude={"from": sorted({s.arrays[n].firmware for n in upgraded}), "to": str(e["to"])},
                affected={n: start_s + e["at"] + (i % waves) * every for i, n in enumerate(upgraded)},
            )
        elif kind == "slow_drain":
            port = int(e["port"])
            out.update(
                component=f"switch {e['switch']} port 0/{port}",
                magnitude={"delay_us": float(e.get("delay_us", 1000))},
                affected=sorted(
                    h.name
                    for h in s.hosts.values()
                    if h.switch == e["switch"] and port in (h.switch_port, h.array_port)
                ),
            )
        elif kind == "hba_saturation":
            host = s.hosts[e["host"]]
            out.update(
                component=f"host {host.name} HBA {host.host_port}",
                magnitude={"workload": e.get("workload", "datamining"), "iops": float(e.get("iops", 3200))},
                affected=[host.name],
            )
        elif kind == "auto_tiering":
            volume = self.volumes[e["volume"]]
            out.update(
                component=f"volume {e['volume']} on {e['array']}",
                affected=[e["volume"]],
                host=volume.host,
                magnitude={
                    "from_tier0": s.arrays[e["array"]].tier0_share,
                    "target_tier0": float(e.get("target_tier0", 0.22)),
                    "time_constant_s": float(e.get("time_constant_s", 600)),
                    "batch_requests_gain": TIERING_BATCH_GAIN,
                    "time_to_effect_s": self.time_to_effect_s(e["volume"], out["start"], self.fleet.t),
                },
            )
        elif kind == "workload_added":
            out.update(
                component=f"array {s.hosts[e['host']].array}",
                affected=[e["host"]],
                magnitude={
                    "workload": e["workload"],
                    "iops": float(e["iops"]),
                    "count": int(e.get("count", 1)),
                    "every_s": float(e.get("every", 0)),
                }
                | self._load_curve(e),
            )
        elif kind == "instance_restart":
            out.update(component=f"sql instance {e['host']}", affected=[e["host"]], magnitude={})
        elif kind == "array_restart":
            out.update(component=f"array {e['array']}", affected=[e["array"]], magnitude={})
        elif kind == "api_fault":
            component = e.get("array") or e.get("switch")
            out.update(component=component, affected=[component], magnitude={"fault": e["fault"]})
        return out
