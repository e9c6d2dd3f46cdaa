"""./sanlens slo: each SLO's attainment and error budget left over its period, per entity, with the alerts
firing now (sanlens_marts.slo_compliance and sanlens.slo_alerts)."""

from __future__ import annotations

from sanlensctl import db
from sanlensctl.errors import SanlensError
from slo import definitions

QUERY = """
WITH firing AS (
    -- pages before tickets, whatever order the rows come in
    SELECT slo, entity, arraySort(s -> s != 'page', groupArrayIf(severity, state = 'firing')) AS severities
    FROM (
        SELECT slo, entity, severity, argMax(state, ts) AS state
        FROM sanlens.slo_alerts FINAL GROUP BY slo, entity, severity
    )
    GROUP BY slo, entity
)
SELECT c.slo AS slo, c.entity AS entity, sum(c.total) AS ios, sum(c.good) / sum(c.total) AS attainment,
    1 - (sum(c.total) - sum(c.good)) / ((1 - any(c.objective)) * sum(c.total)) AS budget_left,
    arrayStringConcat(any(f.severities), ', ') AS firing
FROM sanlens_marts.slo_compliance AS c
LEFT JOIN firing AS f ON c.slo = f.slo AND c.entity = f.entity
WHERE c.day > today() - {days:UInt32}
GROUP BY c.slo, c.entity
ORDER BY slo, budget_left, entity
LIMIT {limit:UInt32} BY slo"""


def show(limit: int = 20) -> None:
    from sanlensctl import cli

    slos = definitions.load()
    client = db.client()
    if not client.command("EXISTS TABLE sanlens_marts.slo_compliance"):
        raise SanlensError("sanlens_marts.slo_compliance does not exist yet: run ./sanlens dbt build")
    rows = client.query(QUERY, parameters={"days": round(slos.period_days), "limit": limit}).result_rows
    by_slo = {}
    for slo, entity, ios, attainment, budget_left, firing in rows:
        by_slo.setdefault(slo, []).append(
            (entity, f"{ios:,.0f}", f"{attainment:.4%}", f"{budget_left:.1%}", firing or "-")
        )
    for s in slos.slos:
        print(
            f"\n{s.name}: {s.description or ''} (objective {s.objective:g}, {s.threshold_ms:g} ms, {s.side} side,"
            f" last {slos.period_days:g} days)"
        )
        if s.name in by_slo:
            cli.print_rows(["entity", "I/Os", "attainment", "budget left", "firing"], by_slo[s.name])
        else:
            print("  no I/Os yet")
