"""The latency model: where an I/O's time goes (docs/domain.md, "Where an I/O's time goes").

    host latency = host queueing (HBA) + fabric (switch hops, distance, slow drain) + array service time

Array service times are lognormal mixtures per media, tier share and firmware, calibrated on the
reference figures: all-flash writes on 3.1.3 average 0.5 ms with ~10% in the 0.125 ms bucket; on
3.2.1 (Express Writes) 0.25 ms with ~40% there; reads unchanged; Tier 1 SAS about 35 ms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ingest import buckets

SWITCH_HOP_US = 20.0
FIBRE_US_PER_KM = 5.0
HOST_STACK_US = 15.0
# What an I/O costs beyond FC's on iSCSI, per I/O and direction. The studies give no figure: TR-3273 (004) found the
# iSCSI software initiator's response times "slightly higher" than Fibre Channel's at the same load. An iSCSI command
# and its data cross a TCP/IP stack in software on the host (the Microsoft initiator) and on the array's target, where
# FC's HBAs move frames in hardware; one trip through a kernel TCP/IP stack on 10 GbE costs some tens of µs (a
# netperf TCP_RR round trip), so 50 µs for both ends: a tenth of an all-flash write's 0.5 ms, "slightly higher".
ISCSI_STACK_US = 50.0
TRANSPORT_US = {"fc": 0.0, "iscsi": ISCSI_STACK_US}


@dataclass(frozen=True)
class Mixture:
    """A mixture of lognormals, each given as (weight, mean in ms, sigma of log)."""

    parts: tuple[tuple[float, float, float], ...]

    def mean_ms(self) -> float:
        return sum(w * m for w, m, _ in self.parts)

    def scaled(self, factor: float) -> Mixture:
        return Mixture(tuple((w, m * factor, s) for w, m, s in self.parts))

    def blend(self, other: Mixture, weight_of_other: float) -> Mixture:
        a = tuple((w * (1 - weight_of_other), m, s) for w, m, s in self.parts)
        b = tuple((w * weight_of_other, m, s) for w, m, s in other.parts)
        return Mixture(tuple(p for p in a + b if p[0] > 0))

    def cdf(self, x_ms: float) -> float:
        if x_ms == math.inf:
            return 1.0
        total = 0.0
        for w, m, s in self.parts:
            mu = math.log(m) - s * s / 2
            total += w * 0.5 * (1 + math.erf((math.log(x_ms) - mu) / (s * math.sqrt(2))))
        return total

    def bucket_probabilities(self) -> np.ndarray:
        upper = np.array([self.cdf(x) for x in buckets.UPPER_MS])
        p = np.diff(np.concatenate([[0.0], upper]))
        p = np.clip(p, 0, None)
        return p / p.sum()


SSD_READ = Mixture(((1.0, 0.30, 0.55),))
SSD_WRITE = {
    "3.1.3": Mixture(((1.0, 0.50, 0.90),)),
    "3.2.1": Mixture(((0.42, 0.10, 0.30), (0.58, 0.36, 0.80))),  # Express Writes
}
SAS_READ = Mixture(((1.0, 35.0, 0.50),))
SAS_WRITE = Mixture(((1.0, 20.0, 0.50),))


def tier_service_time(tier: int, firmware: str, direction: str, utilisation: float) -> Mixture:
    """One tier's service-time distribution in one interval: Tier 0 is SSD, Tier 1 SAS (an all-flash array's only
    tier is its Tier 0)."""
    if tier == 0:
        mix = SSD_READ if direction == "read" else SSD_WRITE.get(firmware, SSD_WRITE["3.1.3"])
    else:
        mix = SAS_READ if direction == "read" else SAS_WRITE
    return mix.scaled(load_factor(utilisation))


def service_time(media: str, firmware: str, direction: str, tier0_io_share: float, utilisation: float) -> Mixture:
    """The array's service-time distribution for one volume and direction in one interval."""
    ssd = tier_service_time(0, firmware, direction, utilisation)
    if media == "hybrid" and tier0_io_share < 1:
        return ssd.blend(tier_service_time(1, firmware, direction, utilisation), 1.0 - tier0_io_share)
    return ssd


SATURATION_ONSET = 0.95  # the utilisation past which the curve below would reach infinity: it goes on linearly


def load_factor(utilisation: float) -> float:
    """Service times stretch as the array approaches its IOPS capacity: the consolidation knee. Past capacity the
    array serves no more (Fleet.step caps its IOPS); the hosts' outstanding I/Os still grow with the load they
    offer, so by Little's law the service time grows in proportion to it."""
    u = max(utilisation, 0.0)
    if u <= SATURATION_ONSET:
        return 1.0 + u**4 / (1.0 - u)
    return load_factor(SATURATION_ONSET) * u / SATURATION_ONSET


def knee_utilisation() -> float:
    """Where the service time bends: the utilisation at which a 1 % rise in load costs 1 % more service time
    (elasticity 1), which is where throughput over service time (Kleinrock's power) peaks: the knee capacity of
    docs/domain.md ("Load curves")."""
    grid = np.linspace(0.01, SATURATION_ONSET, 9401)
    return float(grid[np.argmax(grid / np.array([load_factor(u) for u in grid]))])


def fabric_us(hops: int, distance_km: float, slow_drain_us: float) -> float:
    return hops * SWITCH_HOP_US + distance_km * FIBRE_US_PER_KM + slow_drain_us


def host_queueing_us(outstanding: float, queue_depth: int, downstream_us: float) -> float:
    """HBA queueing: negligible at low occupancy, dominant as outstanding I/Os approach the queue depth."""
    rho = min(outstanding / queue_depth, 0.98)
    return HOST_STACK_US + downstream_us * rho**8 / (1.0 - rho)


def tier0_io_share(tier0_capacity_share: float) -> float:
    """Access skew: the hottest pages are promoted first, so a small Tier 0 share serves most I/Os."""
    return min(0.97, tier0_capacity_share**0.2) if tier0_capacity_share > 0 else 0.0


def sample_histogram(rng: np.random.Generator, mixture: Mixture, ios: int) -> np.ndarray:
    return rng.multinomial(ios, mixture.bucket_probabilities()) if ios > 0 else np.zeros(buckets.COUNT, dtype=np.int64)
