"""The notifier: the SLO alerts of alerts.slo (the burn_rates job) posted to Alertmanager's v2 API, one process.

A firing alert is posted without endsAt every time the job sends it (every minute while it fires), so
Alertmanager keeps it active; a resolved one is posted with endsAt. A message is committed only once
Alertmanager took it: while Alertmanager is down the notifier retries the same message (every 5 s) and
nothing is lost; after a crash it posts again from its last commit (Alertmanager deduplicates by labels).

Every alert names the contributor and the component behind the burn (`cause`): the incident of the breakdown
job along the entity's paths that is open at the alert (or ended in its last 5 minutes), else the one of the hour
before it, the largest excess first (host queueing on a host, fabric on a switch port, an array), with its start
and end, from sanlens.path_incidents; without one, what the paths' latency was made
of in the 5 minutes before it (sanlens.path_latency), so the on-call knows where to look before opening anything.
The burn_rates job can see a burn before the breakdown job has joined its windows: the first firing message of a
severity on an entity (the one Alertmanager notifies) waits, at most CAUSE_WAIT_S, for the breakdown to pass
the alert's time by CAUSE_MARGIN_S (time for the detector to open an incident) before its cause is looked up,
so the page does not blame what came before the burn, and then up to INCIDENTS_AFTER_S for the incidents' rows.
An incident that starts within CAUSE_MARGIN_S after the alert's time is the alert's too: the burn is judged per
minute, the detector needs two windows above in a row, and a window the breakdown's joins lost (a part that came
too late, as at a demo's 40x) moves the incident's start to the next one that made it."""

from __future__ import annotations

import functools
import json
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta

from confluent_kafka import Consumer

from ingest import topics

GROUP = "sanlens-notifier"
RETRY_S = 5
CAUSE_WAIT_S = 90
CAUSE_MARGIN_S = 30
CAUSE_POLL_S = 2
# The breakdown writes a window's path latency and its incident states in one transaction, but the loader may insert
# the two topics' messages in different batches: once the path windows cover the alert, the incidents get this long.
INCIDENTS_AFTER_S = 10
WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")


# The path incidents along the entity's paths (each path is host:disk:direction; an entity is a path, host:disk,
# or a host: its paths start with it and a colon) open at the alert (or opening within CAUSE_MARGIN_S after it)
# or in the hour before it.
INCIDENTS = """
SELECT contributor, component, path, started_at, ended_at, excess_us, severity
FROM sanlens.path_incidents FINAL
WHERE startsWith(path, {prefix:String}) AND endsWith(path, {direction:String})
    AND started_at <= {ts:DateTime64(3)} + INTERVAL {margin:UInt32} SECOND
    AND (ended_at IS NULL OR ended_at >= {ts:DateTime64(3)} - INTERVAL 1 HOUR)"""
# An incident that ended this long before the alert is still the alert's: the short burn window's length.
RECENT = timedelta(minutes=5)
# Without an incident: the parts of the latency along the entity's paths over the 5 minutes before the alert.
PARTS = """
SELECT sum(host_queueing_us * ios) / sum(ios), sum(fabric_us * ios) / sum(ios), sum(array_us * ios) / sum(ios),
    sum(unexplained_us * ios) / sum(ios), sum(host_us * ios) / sum(ios), any(host), any(switch), any(`array`)
FROM sanlens.path_latency FINAL
WHERE startsWith(concat(host, ':', disk, ':', direction), {prefix:String}) AND endsWith(direction, {direction:String})
    AND window_start > {ts:DateTime64(3)} - INTERVAL 5 MINUTE AND window_start <= {ts:DateTime64(3)}"""
# How far the breakdown has come on the alert's site: the end of its newest path window.
COVERED = """
SELECT max(window_start + toIntervalSecond(window_s)) FROM sanlens.path_latency WHERE site = {site:String}"""
CONTRIBUTOR = {"host_queueing": "host queueing on host", "fabric": "fabric on switch port", "array": "array"}


def cause(client, message: dict, per: str, direction: str = "", deadline: float = 0.0) -> str:
    """The contributor and component behind the burn on the message's entity, in words (module docstring); `per`
    is the SLO's entity kind: path or host (host paths to follow), volume (the array side); `direction` its I/Os';
    until `deadline` (time.monotonic()) a firing alert waits for the breakdown to pass its time."""
    if per == "volume":
        array, _, volume = message["entity"].partition(":")
        return f"array {array}: volume {volume}'s own service time (an array-side SLO: no host path to break down)"
    ts = message["ts"].replace("T", " ").rstrip("Z")[:23]
    params = {"prefix": f"{message['entity']}:", "direction": direction, "ts": ts, "margin": CAUSE_MARGIN_S}
    incidents, behind = _incidents_once_covered(client, message, params, deadline)
    if incidents:
        return _incident_in_words(incidents, datetime.fromisoformat(ts).replace(tzinfo=UTC), message["entity"])
    parts = client.query(PARTS, parameters=params).first_row
    if not parts or not parts[4]:
        return f"{behind}no latency breakdown for the entity's paths in the 5 minutes before the alert"
    queueing, fabric, array, unexplained, measured, host, switch, array_name = parts
    return (
        f"{behind}no incident; over the 5 minutes before: {measured:,.0f} us per I/O, host queueing on host {host} "
        f"{queueing / measured:.0%}, fabric on switch {switch} {fabric / measured:.0%}, array {array_name} "
        f"{array / measured:.0%}, unexplained {unexplained / measured:.0%} (./sanlens explain {host})"
    )


def _incident_in_words(incidents: list[tuple], at: datetime, entity: str) -> str:
    """The incident behind the alert at `at`: one still open then (or ended within RECENT) before one that ended
    earlier, then the largest excess; with its start, its end, and the paths of its component's incidents that
    overlap it."""
    never = datetime.max.replace(tzinfo=UTC)
    spans = [(r, r[3].replace(tzinfo=UTC), r[4].replace(tzinfo=UTC) if r[4] else never) for r in incidents]
    chosen, since, end = max(spans, key=lambda s: (s[2] >= at - RECENT, s[0][5]))
    contributor, component, _, _, ended, excess_us, severity = chosen
    paths = {r[2] for r, start, stop in spans if r[:2] == chosen[:2] and start <= end and stop >= since}
    until = f"ended {end:%H:%M}" if ended else "still open"
    return (
        f"{CONTRIBUTOR.get(contributor, contributor)} {component}: +{excess_us:,.0f} us per I/O since "
        f"{since:%Y-%m-%d %H:%M} UTC, {until} ({severity} incident on {len(paths)} path(s); ./sanlens explain "
        f"{entity.split(':')[0]})"
    )


def _incidents_once_covered(client, message: dict, params: dict, deadline: float) -> tuple[list, str]:
    """The entity's incidents once the breakdown is CAUSE_MARGIN_S past the alert's time, or at `deadline`; and,
    when it never got there, the words that say so (the cause then rests on what the breakdown had)."""
    wanted = datetime.fromisoformat(params["ts"]).replace(tzinfo=UTC) + timedelta(seconds=CAUSE_MARGIN_S)
    covered_since = None  # time.monotonic() when the path windows first covered the alert
    while True:
        incidents = client.query(INCIDENTS, parameters=params).result_rows
        covered = client.query(COVERED, parameters={"site": message["site"]}).first_row[0]
        if incidents or message["state"] != "firing" or covered is None or covered.year < 2000:
            return incidents, ""  # found, or a resolved alert, or a site the breakdown has no paths of
        covered = covered.replace(tzinfo=UTC)
        if covered >= wanted:
            covered_since = covered_since or time.monotonic()
            if time.monotonic() - covered_since >= INCIDENTS_AFTER_S or time.monotonic() >= deadline:
                return incidents, ""
        elif time.monotonic() >= deadline:
            return incidents, f"the breakdown was at {covered:%H:%M:%S} UTC, behind the alert; "
        time.sleep(CAUSE_POLL_S)


def alert(message: dict, generator_url: str = "", why: str = "") -> dict:
    """Alertmanager's alert for one message of alerts.slo; `why`: its cause, in words."""
    burn = ", ".join(f"{w} {message[f'burn_{w}']:.1f}" for w in WINDOWS)
    out = {
        "labels": {
            "alertname": "LatencySLOBurn",
            "slo": message["slo"],
            "entity": message["entity"],
            "severity": message["severity"],
            "site": message["site"],
        },
        "annotations": {
            "summary": f"{message['slo']} on {message['entity']}: error budget burning ({message['severity']})",
            "burn_rates": burn,
            "budget_left": f"{message['budget_left']:.3f}",
            "evaluated_at": message["ts"],
            **({"cause": why} if why else {}),
        },
        "generatorURL": generator_url,
    }
    if message["state"] == "resolved":
        out["endsAt"] = message["ts"]
    return out


def post(url: str, alerts: list[dict]) -> None:
    request = urllib.request.Request(
        f"{url}/api/v2/alerts", json.dumps(alerts).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as resp:
        resp.read()


def run(
    bootstrap: str,
    alertmanager: str,
    topic: str = topics.SLO_ALERTS,
    group: str = GROUP,
    why=lambda message, deadline: "",
    kafka_user: str | None = None,
) -> None:
    """Posts every alert of `topic` to `alertmanager`; `why(message, deadline)` gives each its cause in words. It
    reads as the notifier's Kafka principal, or as admin from another topic or group (tests), or as `kafka_user`."""
    from ingest import kafka_access, settings

    if kafka_user is None:
        kafka_user = kafka_access.NOTIFIER if (topic, group) == (topics.SLO_ALERTS, GROUP) else settings.KAFKA_ADMIN
    consumer = Consumer(
        {
            **settings.kafka_client(kafka_user, bootstrap),
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 3,
        }
    )
    consumer.subscribe([topic])
    announced = set()  # (slo, entity, severity) firing since their first message
    print(f"notifier: {topic} -> {alertmanager}/api/v2/alerts", flush=True)
    while True:
        messages = consumer.consume(500, timeout=1.0)
        batch = [m for m in messages if m.error() is None and m.value()]
        if not batch:
            continue
        alerts = []
        deadline = time.monotonic() + CAUSE_WAIT_S  # one wait for the whole batch: they wait on the same job
        for m in batch:
            try:
                message = json.loads(m.value())
                first = _first_of_episode(message, announced)  # the one Alertmanager notifies: worth a wait
                alerts.append(alert(message, why=_cause_or_error(why, message, deadline if first else 0.0)))
            except (ValueError, KeyError) as exc:  # not an alert of the contract: say so and go on
                print(f"notifier: skipped offset {m.offset()}: {exc!r}", flush=True)
        while alerts:
            try:
                post(alertmanager, alerts)
                break
            except (urllib.error.URLError, OSError) as exc:
                print(f"notifier: Alertmanager unavailable ({exc}); retrying in {RETRY_S} s", flush=True)
                time.sleep(RETRY_S)
        consumer.commit(asynchronous=False)


def _first_of_episode(message: dict, announced: set) -> bool:
    """Whether the message is a severity's first firing one on its SLO and entity (kept in `announced` until it
    resolves); the minute-by-minute re-sends after it only keep Alertmanager's alert active."""
    key = (message["slo"], message["entity"], message["severity"])
    if message["state"] != "firing":
        announced.discard(key)
        return False
    first = key not in announced
    announced.add(key)
    return first


def _cause_or_error(why, message: dict, deadline: float) -> str:
    """The alert's cause; a page goes out without it rather than not at all when it cannot be found."""
    try:
        return why(message, deadline)
    except Exception as exc:  # ClickHouse down or busy: the page matters more than its explanation
        return f"unknown ({type(exc).__name__}: {str(exc)[:200]})"


@functools.cache
def _clickhouse():
    from clickhouse.client import connect

    return connect()  # on first use: the notifier starts without waiting for ClickHouse


def main() -> None:
    from ingest import settings
    from slo import definitions

    slos = {slo.name: (slo.per, slo.direction) for slo in definitions.load().slos}
    run(
        settings.KAFKA_BOOTSTRAP,
        settings.ALERTMANAGER_URL,
        why=lambda message, deadline: cause(_clickhouse(), message, *slos.get(message["slo"], ("path", "")), deadline),
    )


if __name__ == "__main__":
    sys.exit(main())
