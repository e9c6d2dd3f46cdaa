"""./sanlens slo: each SLO's attainment and error budget left over its period, per entity, with the alerts
firing now (the shared query of queries/budget.py, which the report and the SLO dashboard run too)."""

from __future__ import annotations

from queries import budget
from sanlensctl import db
from sanlensctl.output import print_rows
from slo import definitions

COLUMNS = ["entity", "I/Os", "attainment", "budget left", "firing"]


def show(limit: int = 20) -> None:
    slos = definitions.load()
    by_slo = budget.over_the_period(db.reachable(), slos.period_days, limit)
    for s in slos.slos:
        print(
            f"\n{s.name}: {s.description or ''} (objective {s.objective:g}, {s.threshold_ms:g} ms, {s.side} side,"
            f" last {slos.period_days:g} days)"
        )
        if s.name in by_slo:
            print_rows(COLUMNS, [cells(r) for r in by_slo[s.name]])
        else:
            print("  no I/Os yet")


def cells(row: dict) -> list[str]:
    """An entity's row as `slo` prints it; the report shows the budget left in the same words."""
    ios, attainment = f"{row['ios']:,.0f}", f"{row['attainment']:.4%}"
    return [row["entity"], ios, attainment, percent(row["budget_left"]), row["firing"] or "-"]


def percent(share: float) -> str:
    """A share of the budget as both views print it: -20,956.0%."""
    return f"{share:,.1%}"
