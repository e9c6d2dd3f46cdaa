"""Scenario files (ingest/scenarios/*.yaml): the fleet, its topology, the workloads and timed events.

Lists may hold templates that expand to many items: an array entry with `count: 200` and a name
pattern such as "af{i:03d}", and a host entry with `per_array: 1` and a pattern such as "{array}-sql{j}".
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

import yaml

# kind: (read share, I/O size in KB): TPC-E-like, OLTP, data mining (docs/domain.md).
WORKLOADS = {"tpce": (0.90, 8), "oltp": (0.80, 8), "datamining": (0.95, 256)}
ARRAY_PORTS = 4  # the last ports of each switch face the arrays: array k's paths use port (ports - 4 + k % 4)
# How a host reaches its array: Fibre Channel or iSCSI (the studies compare them: docs/domain.md "Transport and
# multipath policy"). An array serves its hosts by its transport unless a host is attached otherwise.
TRANSPORTS = ("fc", "iscsi")
# The Windows MPIO load-balance policies of the Microsoft DSM (Set-MSDSMGlobalDefaultLoadBalancePolicy, mpclaim): the
# studies name round robin (the HP DSM on StoreVirtual) and least queue depth (TR-4403 with the Microsoft DSM). Round
# robin is the DSM's default for active-active arrays.
MULTIPATH_POLICIES = (
    "round_robin",
    "round_robin_with_subset",
    "least_queue_depth",
    "failover_only",
    "weighted_paths",
    "least_blocks",
)


ROLES = ("data", "log")  # each host has a volume of each role, its own disk


@dataclass
class Volume:
    name: str
    array: str
    host: str
    role: str  # one of ROLES
    tier0_share: float = 0.0  # of capacity (hybrid arrays)


@dataclass
class Array:
    name: str
    customer: str
    site: str
    model: str
    media: str  # ssd | hybrid
    firmware: str
    capacity_iops: float
    tier0_share: float = 0.0  # hybrid arrays: each volume's Tier 0 share of capacity before any auto-tiering
    tier0_noise: float = 0.0  # how much that share wanders from one interval to the next (standard deviation)
    tier0_capacity_gib: float = 4096.0  # hybrid arrays: the SSD space of Tier 0 (the rest of a volume is on Tier 1)
    transport: str = "fc"  # how its hosts reach it, unless a host is attached otherwise
    volumes: list[Volume] = field(default_factory=list)


@dataclass
class Switch:
    name: str
    site: str
    ports: int


@dataclass
class Workload:
    kind: str
    iops: float

    @property
    def read_share(self) -> float:
        return WORKLOADS[self.kind][0]

    @property
    def io_kb(self) -> float:
        return WORKLOADS[self.kind][1]


@dataclass
class Host:
    name: str
    customer: str
    site: str
    array: str
    switch: str
    host_port: str  # the HBA port's WWN
    switch_port: int  # where the HBA plugs in
    array_port: int  # the switch port towards the array on this host's path
    queue_depth: int
    hba_mbps: float
    distance_km: float
    hops: int
    sql_instance: str
    databases: list[str]
    workloads: list[Workload]
    cpu_base_percent: float = 5.0  # % Processor Time with no I/O: the rest grows with its batches/s
    transport: str = "fc"  # how it reaches its array: its array's transport unless the host entry sets its own
    multipath_policy: str = "round_robin"  # its MPIO DSM's load-balance policy


@dataclass
class Scenario:
    name: str
    seed: int
    interval_s: float
    duration_s: float
    arrays: dict[str, Array]
    switches: dict[str, Switch]
    hosts: dict[str, Host]
    events: list[dict]
    path: Path | None = None
    volume_truth: bool = False  # the truth holds every volume's histogram of every interval (tests; small fleets)

    def select_arrays(self, pattern) -> list[str]:
        names = pattern if isinstance(pattern, list) else [n for n in self.arrays if fnmatch.fnmatch(n, pattern)]
        missing = [n for n in names if n not in self.arrays]
        if missing:
            raise ValueError(f"unknown arrays in event: {', '.join(missing)}")
        return names


def _expand(items: list[dict], **context) -> list[dict]:
    out = []
    for item in items or []:
        count = item.get("count", 1)
        for i in range(1, count + 1):
            entry = {k: v for k, v in item.items() if k != "count"}
            entry["name"] = str(item["name"]).format(i=i, **context)
            out.append(entry)
    return out


def load(path: str | Path) -> Scenario:
    path = Path(path)
    raw = yaml.safe_load(path.read_text())
    arrays, switches, hosts = {}, {}, {}
    for customer in raw["customers"]:
        for site in customer["sites"]:
            site_switches = [
                Switch(s["name"], site["name"], int(s.get("ports", 48))) for s in _expand(site["switches"])
            ]
            if not site_switches:
                raise ValueError(f"site {site['name']} needs at least one switch")
            switches.update({s.name: s for s in site_switches})
            for a in _expand(site["arrays"]):
                arrays[a["name"]] = Array(
                    a["name"],
                    customer["name"],
                    site["name"],
                    a["model"],
                    a["media"],
                    str(a["firmware"]),
                    float(a.get("capacity_iops", 300000)),
                    float(a.get("tier0_share", 0.0)),
                    float(a.get("tier0_noise", 0.0)),
                    _tier0_capacity_gib(a),
                    transport=_one_of("array", a["name"], "transport", a.get("transport", "fc"), TRANSPORTS),
                )
            for template in site.get("hosts", []):
                targets = [a for a in arrays.values() if a.site == site["name"]] if "per_array" in template else [None]
                for target in targets:
                    for j in range(1, template.get("per_array", 1) + 1):
                        _add_host(hosts, arrays, site_switches, customer["name"], site["name"], template, target, j)
    scenario = Scenario(
        raw["name"],
        int(raw.get("seed", 1)),
        float(raw.get("interval_s", 10)),
        float(raw.get("duration_s", 600)),
        arrays,
        switches,
        hosts,
        raw.get("events", []),
        path,
        bool(raw.get("volume_truth", False)),
    )
    for event in scenario.events:
        _check_event(scenario, event)
    return scenario


def _tier0_capacity_gib(array: dict) -> float:
    """A hybrid array's Tier 0 (SSD) capacity: a number of GiB above 0, set on hybrid arrays only (an all-flash array
    has no tiers)."""
    if "tier0_capacity_gib" not in array:
        return 4096.0
    value = array["tier0_capacity_gib"]
    if array["media"] != "hybrid":
        raise ValueError(f"array {array['name']}: tier0_capacity_gib is for hybrid arrays, not {array['media']}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise ValueError(f"array {array['name']}: tier0_capacity_gib must be a number of GiB above 0, not {value!r}")
    return float(value)


def _one_of(kind: str, name: str, key: str, value, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{kind} {name}: unknown {key} {value!r} (one of {', '.join(allowed)})")
    return value


def _add_host(hosts, arrays, switches, customer, site, t: dict, target, j: int) -> None:
    name = str(t["name"]).format(array=target.name if target else "", j=j)
    array = arrays[target.name if target else t["array"]]
    index = len(hosts)
    switch = next((s for s in switches if s.name == t.get("switch")), switches[index % len(switches)])
    host = Host(
        name,
        customer,
        site,
        array.name,
        switch.name,
        f"10:00:00:00:c9:{index // 256:02x}:{index % 256:02x}:01",
        index % max(switch.ports - ARRAY_PORTS, 1),
        switch.ports - ARRAY_PORTS + list(arrays).index(array.name) % ARRAY_PORTS,
        int(t.get("queue_depth", 256)),
        float(t.get("hba_mbps", 800)),
        float(t.get("distance_km", 1)),
        int(t.get("hops", 1)),
        t.get("sql_instance", "MSSQLSERVER"),
        list(t.get("databases", ["appdb"])),
        [Workload(t.get("workload", "tpce"), float(t.get("iops", 5000)))],
        float(t.get("cpu_base_percent", 5)),
        _one_of("host", name, "transport", t.get("transport", array.transport), TRANSPORTS),
        _one_of("host", name, "multipath_policy", t.get("multipath_policy", "round_robin"), MULTIPATH_POLICIES),
    )
    if host.workloads[0].kind not in WORKLOADS:
        raise ValueError(f"host {name}: unknown workload {host.workloads[0].kind} (one of {', '.join(WORKLOADS)})")
    hosts[name] = host
    for role in ROLES:
        array.volumes.append(Volume(f"{name}_{role}", array.name, name, role, array.tier0_share))


EVENT_FIELDS = {
    "firmware_upgrade": {"arrays", "to"},
    "auto_tiering": {"array", "volume"},
    "slow_drain": {"switch", "port"},
    "hba_saturation": {"host"},
    "workload_added": {"host", "workload", "iops"},
    "instance_restart": {"host"},
    "array_restart": {"array"},
    "api_fault": {"fault"},
}
# what an array's or switch's REST API answers wrong while an api_fault lasts (ingest/simulator/endpoints.py)
API_FAULTS = ("http_500", "truncated", "missing_volume")


def _check_event(scenario: Scenario, event: dict) -> None:
    kind = event.get("type")
    if kind not in EVENT_FIELDS:
        raise ValueError(f"unknown event type {kind!r} (one of {', '.join(EVENT_FIELDS)})")
    missing = EVENT_FIELDS[kind] - set(event)
    if missing or "at" not in event:
        raise ValueError(f"event {kind} needs: at, {', '.join(sorted(EVENT_FIELDS[kind]))}")
    if "host" in event and event["host"] not in scenario.hosts:
        raise ValueError(f"event {kind}: unknown host {event['host']}")
    if "array" in event and event["array"] not in scenario.arrays:
        raise ValueError(f"event {kind}: unknown array {event['array']}")
    if "switch" in event and event["switch"] not in scenario.switches:
        raise ValueError(f"event {kind}: unknown switch {event['switch']}")
    if kind == "firmware_upgrade":
        scenario.select_arrays(event["arrays"])
    if kind == "api_fault" and (event["fault"] not in API_FAULTS or ("array" in event) == ("switch" in event)):
        raise ValueError(f"event api_fault: one array or one switch, and a fault of {', '.join(API_FAULTS)}")
