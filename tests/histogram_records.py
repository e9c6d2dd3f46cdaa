"""Records on telemetry.samples (docs/contract.md) as the histograms job reads them: an array volume's bucket
sample and a host disk's interval averages, at a time from T0; for the job's tests in the mini-cluster and on a
real Flink cluster."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def sample(seconds: float, direction: str, bucket: int, ios: int, volume: str = "v1") -> dict:
    """A record's message on telemetry.samples (docs/contract.md) with this one sample."""
    return {
        "ts": (T0 + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "samples": [
            {"metric": f"volume.{direction}_service_time_hist", "value": float(ios), "unit": "ios", "bucket": bucket}
        ],
        "site": "s",
        "host": "",
        "array": "a1",
        "volume": volume,
        "host_port": "",
    }


def host_record(seconds: float, disk: str = "D:", **values: float) -> dict:
    """A host disk's record: its samples (metric without the `disk.` prefix = value) in one message."""
    return {
        "ts": (T0 + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "samples": [{"metric": f"disk.{m}", "value": v, "unit": "", "bucket": -1} for m, v in values.items()],
        "site": "s",
        "host": "sql1",
        "disk": disk,
        "array": "",
        "volume": "",
        "host_port": "",
    }
