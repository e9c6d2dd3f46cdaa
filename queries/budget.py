"""The error budget left per SLO and entity: the one query `./sanlens slo`, `./sanlens report` and the SLO dashboard
run, on the burn_rates job's windows (sanlens.slo_windows, FINAL: a window delivered twice counts once). The
command line and the report ask it over the SLO's period, the dashboard over its time range."""

from __future__ import annotations


def budget_left(good: str, total: str, objective: str) -> str:
    """The share of the error budget that `good` of `total` I/Os left unspent: below 0 when they overspent it."""
    return f"1 - ({total} - {good}) / ((1 - {objective}) * {total})"


def burn_rate(good: str, total: str, objective: str) -> str:
    """How many times faster than the objective allows the budget burns: 1 spends it in exactly the period."""
    return f"(1 - {good} / {total}) / (1 - {objective})"


def per_entity(within: str, selection: str = "1") -> str:
    """Per SLO, entity and site, over the windows `within` keeps (a condition on window_start) and `selection`: the
    I/Os judged, the objective, the attainment (the share within the threshold) and the budget left."""
    return f"""
SELECT w.slo AS slo, w.entity AS entity, w.site AS site,
    sum(w.total) AS ios,
    any(w.objective) AS objective,
    sum(w.good) / sum(w.total) AS attainment,
    {budget_left("sum(w.good)", "sum(w.total)", "any(w.objective)")} AS budget_left
FROM sanlens.slo_windows AS w FINAL
WHERE {within} AND {selection}
GROUP BY slo, entity, site
HAVING ios > 0"""


# The SLO's period as the burn_rates job counts it (its alerts' budget_left): whole days, rolling, in UTC: today
# and the {days} - 1 days before it.
PERIOD = "window_start >= toStartOfDay(now64(3, 'UTC')) - toIntervalDay({days:UInt32} - 1)"

# Over the period, with the severities firing now on each (pages before tickets), least budget first: what
# `./sanlens slo` prints and the report charts, {limit} entities per SLO.
OVER_THE_PERIOD = f"""
WITH firing AS (
    SELECT slo, entity, arraySort(s -> s != 'page', groupArrayIf(severity, state = 'firing')) AS severities
    FROM (
        SELECT slo, entity, severity, argMax(state, ts) AS state
        FROM sanlens.slo_alerts FINAL GROUP BY slo, entity, severity
    )
    GROUP BY slo, entity
)
SELECT b.slo AS slo, b.entity AS entity, b.site AS site, b.ios AS ios, b.attainment AS attainment,
    b.budget_left AS budget_left, arrayStringConcat(f.severities, ', ') AS firing
FROM ({per_entity(PERIOD)}) AS b
LEFT JOIN firing AS f ON b.slo = f.slo AND b.entity = f.entity
ORDER BY slo, budget_left, entity
LIMIT {{limit:UInt32}} BY slo"""


def over_the_period(client, period_days: float, limit: int) -> dict[str, list[dict]]:
    """Per SLO name, its `limit` entities with the least budget left over the period (OVER_THE_PERIOD's rows)."""
    rows = client.query(OVER_THE_PERIOD, parameters={"days": round(period_days), "limit": limit}).named_results()
    by_slo: dict[str, list[dict]] = {}
    for r in rows:
        by_slo.setdefault(r["slo"], []).append(r)
    return by_slo
