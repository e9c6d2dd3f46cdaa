"""SLO definitions (slo/slos.yaml or the file SANLENS_SLOS names): read, checked, and the burn rates their
alerts take. A bad file is refused with one line naming the file and the field."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

DEFAULT_FILE = Path(__file__).with_name("slos.yaml")
WINDOWS = {"5m": 300, "30m": 1800, "1h": 3600, "2h": 7200, "6h": 21600, "1d": 86400, "3d": 259200}
LABELS = ("customer", "site", "array", "model", "tier", "host", "disk", "volume", "database")
SIDES, DIRECTIONS, ENTITIES, SEVERITIES = (
    ("host", "array"),
    ("read", "write"),
    ("path", "volume", "host"),
    ("page", "ticket"),
)


class SloFileError(ValueError):
    """A bad SLO file: the message is one line, `file: field: what is wrong`."""


@dataclass(frozen=True)
class Slo:
    name: str
    description: str
    side: str
    direction: str
    threshold_ms: float
    objective: float
    per: str
    select: dict[str, tuple[str, ...]]

    @property
    def budget(self) -> float:
        """The share of I/Os the objective allows to be slow."""
        return 1 - self.objective


@dataclass(frozen=True)
class Alert:
    severity: str
    budget: float  # of the period's error budget, burnt within the long window
    long_s: int
    short_s: int

    def burn_rate(self, period_days: float) -> float:
        """The burn rate that spends `budget` of the budget in one long window: 14.4 for 2 % in 1 h of 30 d."""
        return self.budget * period_days * 86400 / self.long_s


@dataclass(frozen=True)
class Definitions:
    period_days: float
    slos: tuple[Slo, ...]
    alerts: tuple[Alert, ...]


def path() -> Path:
    return Path(os.environ.get("SANLENS_SLOS", DEFAULT_FILE))


def load(file: Path | None = None) -> Definitions:
    file = Path(file or path())
    try:
        raw = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SloFileError(f"{file}: {str(exc).splitlines()[0]}") from None
    return _check(file, raw)


def _check(file: Path, raw) -> Definitions:
    def fail(field: str, problem: str):
        raise SloFileError(f"{file}: {field}: {problem}")

    def number(value, field: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            fail(field, f"{value!r} is not a number")
        return float(value)

    def one_of(value, choices, field: str) -> str:
        if value not in choices:
            fail(field, f"{value!r} is not one of {', '.join(choices)}")
        return value

    if not isinstance(raw, dict):
        fail("(top)", "not a mapping with period_days, slos and alerts")
    for key in raw:
        if key not in ("period_days", "slos", "alerts"):
            fail(key, "unknown field (period_days, slos, alerts)")
    period = number(raw.get("period_days", 30), "period_days")
    if period <= 0:
        fail("period_days", f"{period:g} is not positive")
    slos, names = [], set()
    for i, s in enumerate(raw.get("slos") or []):
        at = f"slos[{i}]"
        if not isinstance(s, dict):
            fail(at, "not a mapping")
        known = ("name", "description", "side", "direction", "threshold_ms", "objective", "per", "select")
        for key in s:
            if key not in known:
                fail(f"{at}.{key}", f"unknown field ({', '.join(known)})")
        name = s.get("name")
        if not isinstance(name, str) or not name:
            fail(f"{at}.name", "missing")
        if name in names:
            fail(f"{at}.name", f"{name!r} is defined twice")
        names.add(name)
        threshold = number(s.get("threshold_ms"), f"{at}.threshold_ms")
        if threshold <= 0:
            fail(f"{at}.threshold_ms", f"{threshold:g} is not positive")
        objective = number(s.get("objective"), f"{at}.objective")
        if not 0 < objective < 1:
            fail(f"{at}.objective", f"{objective:g} is not between 0 and 1 (exclusive)")
        select = {}
        for label, value in (s.get("select") or {}).items():
            one_of(label, LABELS, f"{at}.select.{label}")
            values = value if isinstance(value, list) else [value]
            if not values or not all(isinstance(v, str | int | float) for v in values):
                fail(f"{at}.select.{label}", "a value or a list of values")
            select[label] = tuple(str(v) for v in values)
        slos.append(
            Slo(
                name,
                str(s.get("description", "")),
                one_of(s.get("side", "host"), SIDES, f"{at}.side"),
                one_of(s.get("direction"), DIRECTIONS, f"{at}.direction"),
                threshold,
                objective,
                one_of(s.get("per", "path"), ENTITIES, f"{at}.per"),
                select,
            )
        )
    alerts = []
    for i, a in enumerate(raw.get("alerts") or []):
        at = f"alerts[{i}]"
        if not isinstance(a, dict):
            fail(at, "not a mapping")
        long_s = WINDOWS[one_of(a.get("long"), tuple(WINDOWS), f"{at}.long")]
        short_s = WINDOWS[one_of(a.get("short"), tuple(WINDOWS), f"{at}.short")]
        if short_s >= long_s:
            fail(f"{at}.short", "not shorter than the long window")
        budget = number(a.get("budget"), f"{at}.budget")
        if not 0 < budget <= 1:
            fail(f"{at}.budget", f"{budget:g} is not a share of the budget in (0, 1]")
        alerts.append(Alert(one_of(a.get("severity"), SEVERITIES, f"{at}.severity"), budget, long_s, short_s))
    return Definitions(period, tuple(slos), tuple(alerts))
