"""The latency SLOs as Grafana alert rules, for teams that alert from Grafana rather than through the burn_rates job
and Alertmanager: a Grafana alerting file-provisioning document (apiVersion 1) built from the SLO definitions
(slo/slos.yaml, or the file SANLENS_SLOS names: the file the burn_rates job reads), written by grafana/generate.py
to grafana/provisioning/alerting/sanlens-slos.yaml.

- `groups`: one rule group (folder "sanlens", evaluated every minute like the job) with a rule per SLO and alert
  rule of the file. Each rule runs the same ClickHouse SQL (`burn_rate_sql`) twice, over its long window (A) and
  its short window (B): per entity, the burn rate of the error budget from the job's good and total I/Os in
  sanlens.slo_windows, with slo, entity and site as label columns, which Grafana turns into one alert instance
  per entity. C and D pass A and B on to the annotations (a reduce of numbers is a no-op in Grafana); E, the
  condition, fires when both reach the rule's burn rate, as the job's rule does.
- `contactPoints`: the webhook "sanlens-webhook", at the URL Alertmanager posts to (SANLENS_ALERT_WEBHOOK_URL,
  interpolated by Grafana from its environment).
- `policies`: the routing of slo/alertmanager/alertmanager.yml (grouping by slo, entity and severity, a page lane
  and a ticket lane with their timings) with that contact point as every route's receiver.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import yaml

from grafana.sql_query import DATASOURCE_UID, PLUGIN, TABLE
from slo import definitions
from slo.definitions import Alert, Definitions, Slo

HERE = Path(__file__).resolve().parent
PATH = HERE / "provisioning" / "alerting" / "sanlens-slos.yaml"
ALERTMANAGER = HERE.parent / "slo" / "alertmanager" / "alertmanager.yml"
FOLDER, GROUP, INTERVAL = "sanlens", "sanlens-slos", "1m"
CONTACT_POINT = "sanlens-webhook"
WEBHOOK_URL = "${SANLENS_ALERT_WEBHOOK_URL}"  # Grafana interpolates $VAR in a contact point's settings
EXPRESSIONS = "__expr__"  # Grafana's server-side expressions: their data source uid and type
LONG, SHORT, LONG_BURN, SHORT_BURN, CONDITION = "A", "B", "C", "D", "E"
UID_MAX = 40  # Grafana's limit on a uid's length


def duration(seconds: int) -> str:
    """A duration as Grafana and Prometheus write it, in its largest whole unit: 300 -> 5m, 86400 -> 1d."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def pending(alert: Alert) -> str:
    """How long a rule's condition must hold before it fires (`for`): half its short window, rounded down to the
    minute (Pyrra's choice: 2m for 1h/5m, 15m for 6h/30m, 1h for 1d/2h, 3h for 3d/6h). One evaluation over a
    window a late load left short does not fire; a real burn keeps both windows above the rate far longer."""
    return duration(max(alert.short_s // 2 // 60, 1) * 60)


def title(slo: Slo, alert: Alert) -> str:
    """The rule's title: SLO, severity and windows, e.g. "flash-reads page 1h/5m"."""
    return f"{slo.name} {alert.severity} {duration(alert.long_s)}/{duration(alert.short_s)}"


def uid(slo: Slo, alert: Alert) -> str:
    """A uid Grafana accepts (letters, digits, - and _, at most 40 characters), readable when the SLO's name
    allows, else shortened with a hash of the title to stay unique."""
    readable = f"slo-{slo.name}-{alert.severity}-{duration(alert.long_s)}-{duration(alert.short_s)}"
    if len(readable) <= UID_MAX and re.fullmatch(r"[A-Za-z0-9_-]+", readable):
        return readable
    digest = hashlib.sha1(title(slo, alert).encode()).hexdigest()[:8]
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", readable)
    return f"{slug[: UID_MAX - len(digest) - 1]}-{digest}"


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _verbatim(value: str) -> str:
    """A value Grafana's provisioning would interpolate ($VAR), kept as written ($$ is a literal $)."""
    return value.replace("$", "$$")


def burn_rate_sql(slo: Slo) -> str:
    """The SLO's burn rate per entity over the query's time range, as the burn_rates job computes it: the share of
    bad I/Os of the windows that start in [from, to) over the error budget 1 - objective (1 spends the budget in
    exactly the SLO's period). An entity without I/O in the range has no row. $__timeFilter includes its end:
    `window_start < $__toTime` leaves out the window that starts there, as the job does."""
    return f"""SELECT
    slo,
    entity,
    site,
    (1 - sum(good) / sum(total)) / (1 - {slo.objective!r}) AS burn_rate
FROM sanlens.slo_windows FINAL
WHERE slo = {_sql_string(slo.name)}
    AND $__timeFilter(window_start) AND window_start < $__toTime
GROUP BY slo, entity, site
HAVING sum(total) > 0"""


def _query(ref_id: str, slo: Slo, window_s: int) -> dict:
    datasource = {"type": PLUGIN, "uid": DATASOURCE_UID}
    return {
        "refId": ref_id,
        "relativeTimeRange": {"from": window_s, "to": 0},
        "datasourceUid": DATASOURCE_UID,
        "model": {
            "refId": ref_id,
            "datasource": datasource,
            "editorType": "sql",
            "format": TABLE,  # label columns and one number: one alert instance per row
            "queryType": "table",
            "rawSql": burn_rate_sql(slo),
            "intervalMs": 1000,
            "maxDataPoints": 43200,
        },
    }


def _expression(ref_id: str, kind: str, expression: str, **extra) -> dict:
    return {
        "refId": ref_id,
        "datasourceUid": EXPRESSIONS,
        "model": {
            "refId": ref_id,
            "datasource": {"type": EXPRESSIONS, "uid": EXPRESSIONS},
            "type": kind,
            "expression": expression,
            **extra,
            "intervalMs": 1000,
            "maxDataPoints": 43200,
        },
    }


def condition(rate: float) -> str:
    """The rule's condition (math on the burn rates per entity): both windows reach the rate, as in the job."""
    return f"${LONG_BURN} >= {rate!r} && ${SHORT_BURN} >= {rate!r}"


def rule(defs: Definitions, slo: Slo, alert: Alert) -> dict:
    rate = alert.burn_rate(defs.period_days)
    long, short = duration(alert.long_s), duration(alert.short_s)
    entity = "{{ $labels.entity }}"
    value = lambda ref: f'{{{{ printf "%.1f" $values.{ref}.Value }}}}'
    return {
        "uid": uid(slo, alert),
        "title": _verbatim(title(slo, alert)),
        "condition": CONDITION,
        "data": [
            _query(LONG, slo, alert.long_s),
            _query(SHORT, slo, alert.short_s),
            _expression(LONG_BURN, "reduce", LONG, reducer="last"),
            _expression(SHORT_BURN, "reduce", SHORT, reducer="last"),
            _expression(CONDITION, "math", condition(rate)),
        ],
        "noDataState": "OK",  # no I/O in the window: nothing to judge
        "execErrState": "Error",
        "for": pending(alert),
        "labels": {"slo": _verbatim(slo.name), "severity": alert.severity},
        "annotations": {
            "summary": (
                f"{slo.name} on {entity}: the error budget burns at {value(LONG_BURN)}x over {long} "
                f"and {value(SHORT_BURN)}x over {short} (fires at {rate:g}x)"
            ),
            "description": (
                f"{slo.description}. On {entity} (site {{{{ $labels.site }}}}) the I/Os of the last {long} spent "
                f"the error budget {value(LONG_BURN)} times as fast as the objective allows, those of the last "
                f"{short} {value(SHORT_BURN)} times (1 spends exactly the budget of the {defs.period_days:g}-day "
                f"period). This {alert.severity} rule fires while both reach {rate:g}: "
                f"{alert.budget:.0%} of the period's budget spent in {long}."
            ),
        },
        "isPaused": False,
    }


def _matcher(text: str) -> list[str]:
    """An Alertmanager matcher ('severity = "page"') as a Grafana object matcher ["severity", "=", "page"]."""
    m = re.fullmatch(r'\s*(\w+)\s*(=~|!~|!=|=)\s*"?(.*?)"?\s*', text)
    if not m:
        raise ValueError(f"{ALERTMANAGER}: a matcher Grafana's policies cannot take: {text!r}")
    return list(m.groups())


def _route(route: dict) -> dict:
    out = {"receiver": CONTACT_POINT}
    if route.get("matchers"):
        out["object_matchers"] = [_matcher(m) for m in route["matchers"]]
    for key in ("group_by", "group_wait", "group_interval", "repeat_interval"):
        if key in route:
            out[key] = route[key]
    if route.get("routes"):
        out["routes"] = [_route(r) for r in route["routes"]]
    return out


def policy(alertmanager: Path = ALERTMANAGER) -> dict:
    """Alertmanager's routing tree (slo/alertmanager/alertmanager.yml) as Grafana's notification policy, every
    route to the webhook contact point (Alertmanager's two receivers are webhooks to the same URL; the severity
    label tells the lane). Alertmanager's inhibition of a ticket by the page of the same SLO and entity has no
    counterpart in Grafana's provisioning."""
    return {"orgId": 1, **_route(yaml.safe_load(alertmanager.read_text())["route"])}


def build(defs: Definitions | None = None) -> dict:
    """The provisioning document for the SLO definitions (default: definitions.load(), which honours SANLENS_SLOS)."""
    defs = defs or definitions.load()
    return {
        "apiVersion": 1,
        "groups": [
            {
                "orgId": 1,
                "name": GROUP,
                "folder": FOLDER,
                "interval": INTERVAL,
                "rules": [rule(defs, slo, alert) for slo in defs.slos for alert in defs.alerts],
            }
        ],
        "contactPoints": [
            {
                "orgId": 1,
                "name": CONTACT_POINT,
                "receivers": [
                    {
                        "uid": CONTACT_POINT,
                        "type": "webhook",
                        "settings": {"url": WEBHOOK_URL, "httpMethod": "POST"},
                        "disableResolveMessage": False,  # resolved notifications too, like send_resolved
                    }
                ],
            }
        ],
        "policies": [policy()],
    }


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    str,
    lambda dumper, s: dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None),
)


def render(defs: Definitions | None = None) -> str:
    header = (
        "# Grafana alerting provisioning: the latency SLOs' burn-rate alert rules, their webhook contact point and\n"
        "# notification policy. Generated by grafana/generate.py from slo/slos.yaml (grafana/slo_alert_rules.py):\n"
        "# edit those, not this file. Loading the policies replaces the Grafana organisation's policy tree.\n"
    )
    text = yaml.dump(build(defs), Dumper=_Dumper, sort_keys=False, width=1 << 16, allow_unicode=True)  # unfolded
    return header + text
