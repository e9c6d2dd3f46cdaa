"""What the pipeline counted of the records it got (sanlens.pipeline_accounting: per 10 s arrival window, stage and
site, records and samples in, out, dead-lettered, dropped with the reason; docs/contract.md). The demo reads them for
its run's sites since its start ({sites}, {s}): nothing lost is every record in accounted for."""

from __future__ import annotations

SINCE = "window_start >= {s:DateTime64(3)}"
OF_SITES_SINCE = SINCE + " AND site IN {sites:Array(String)}"
RECORDS_IN = "unit = 'records' AND outcome = 'in'"

WINDOWS = f"SELECT uniqExact(window_start) FROM sanlens.pipeline_accounting WHERE {OF_SITES_SINCE}"
RECORDS = f"SELECT sum(records) FROM sanlens.pipeline_accounting WHERE {RECORDS_IN} AND {OF_SITES_SINCE}"
# Telegraf's own heartbeat: records of no site.
HEARTBEATS = f"SELECT sum(records) FROM sanlens.pipeline_accounting WHERE {RECORDS_IN} AND {SINCE} AND site = ''"
BY_OUTCOME = f"""
SELECT unit, outcome, reason, sum(records) FROM sanlens.pipeline_accounting
WHERE {OF_SITES_SINCE}
GROUP BY unit, outcome, reason ORDER BY unit, outcome = 'in' DESC, outcome, reason"""
