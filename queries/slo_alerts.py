"""The SLO alerts' episodes (sanlens.slo_alerts, FINAL): per SLO, entity and severity, from its first firing row to
the resolved row that ends it. The SLO dashboard's alert history (over its selection and range) and the report's
alert table (every episode) read them."""

from __future__ import annotations

from slo import definitions


def episodes(where: str) -> str:
    """The alert episodes of sanlens.slo_alerts (FINAL) whose rows hold `where`: per SLO, entity and severity, from
    its first firing row to the resolved row that ends it (resolved_at NULL while it fires), the peak of each
    burn rate while it fired and the period's budget left at its last row."""
    peaks = ",\n        ".join(f"maxIf(a.burn_{w}, a.state = 'firing') AS peak_burn_{w}" for w in definitions.WINDOWS)
    return f"""(
    SELECT slo, entity, site, severity,
        minIf(a.ts, a.state = 'firing') AS started_at,
        if(countIf(a.state = 'resolved') > 0, maxIf(a.ts, a.state = 'resolved'), NULL) AS resolved_at,
        max(a.ts) AS last_at,
        {peaks},
        argMax(a.budget_left, a.ts) AS budget_left
    FROM (
        SELECT *,
            sum(state = 'resolved') OVER (
                PARTITION BY slo, entity, severity ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
            ) AS episode
        FROM sanlens.slo_alerts FINAL
        WHERE {where}
    ) AS a
    GROUP BY slo, entity, site, severity, a.episode
    HAVING countIf(a.state = 'firing') > 0
)"""


PEAKS = [f"peak_burn_{w}" for w in definitions.WINDOWS]
# Every episode, firing ones first, then the most recent: the report's alert table.
LATEST = f"""
SELECT slo, entity, site, severity, started_at, resolved_at, {", ".join(PEAKS)}, budget_left
FROM {episodes("1")}
ORDER BY resolved_at IS NULL DESC, started_at DESC
LIMIT 100"""
