"""Simulator -> the real Telegraf (socket listener + inputs.http pollers) -> Kafka -> normalize job ->
loader -> ClickHouse, for a small fleet: every record Telegraf sent is accounted for, exactly; and a fleet
whose arrays and switch answer Telegraf's polls wrong for a while (HTTP 500, truncated JSON, a missing volume: the
scenario's api_fault events) makes errors in Telegraf's log and no bad sample."""

from __future__ import annotations

import json
import uuid

import yaml

from ingest.simulator import scenario as scenario_file
from ingest.simulator.endpoints import Endpoints
from ingest.simulator.run import Run
from sanlensctl import config, procs
from tests import scenarios
from tests.support import play_through_telegraf, settle, wait_until

EXPECTED_DROPS = {
    "baseline: first sample of a cumulative series",
    "counter reset",
    "duplicate",
    "field not in catalog",
    "no I/O in interval",
    "no I/O in bucket",
}


def accounting(ch, site: str) -> dict[tuple[str, str, str], int]:
    rows = ch.query(
        "SELECT unit, outcome, reason, sum(records) FROM sanlens.pipeline_accounting "
        "WHERE site = {s:String} GROUP BY ALL",
        parameters={"s": site},
    ).result_rows
    return {(u, o, r): n for u, o, r, n in rows}


def test_every_record_telegraf_sent_is_loaded_dead_lettered_or_counted_as_dropped(stack, ch, tmp_path):
    run_id = uuid.uuid4().hex[:6]
    site = f"e2e-{run_id}"
    path = tmp_path / "e2e.yaml"
    path.write_text(scenarios.text("ingest-e2e", id=f"t{run_id}", site=site))
    s = scenario_file.load(path)
    run = Run(s, tmp_path / "truth", config.KAFKA_BOOTSTRAP, speed=2.0)
    play_through_telegraf(run, f"e2e-{run_id}")
    sent = sum(run.truth.records.values())
    assert sent > 300 and set(run.truth.records) >= {
        "win_disk",
        "sqlserver_database_io",
        "array_vlun",
        "array_vv_histogram",
        "array_vv_tier",
        "brocade_fc_port",
    }

    totals = wait_until(
        lambda: (a := accounting(ch, site)) and a.get(("records", "in", "")) == sent and a,
        120,
        f"{sent} records accounted for",
    )
    assert totals[("records", "out", "")] == sent  # Telegraf sends only well-formed records
    samples_in, samples_out = totals[("samples", "in", "")], totals[("samples", "out", "")]
    dropped = {r: n for (u, o, r), n in totals.items() if u == "samples" and o == "dropped"}
    assert samples_out + sum(dropped.values()) == samples_in
    assert set(dropped) <= EXPECTED_DROPS and dropped["counter reset"] > 0
    loaded = wait_until(
        lambda: (
            (n := ch.command("SELECT count() FROM sanlens.metrics WHERE site = {s:String}", parameters={"s": site}))
            == samples_out
            and n
        ),
        60,
        "samples loaded",
    )
    assert loaded == samples_out
    assert (
        ch.command("SELECT countIf(value < 0) FROM sanlens.metrics WHERE site = {s:String}", parameters={"s": site})
        == 0
    )
    # the histogram deltas travel only for the buckets that counted I/Os, and those are dropped with their reason
    buckets, zeros = ch.query(
        "SELECT uniqExact(bucket), countIf(value = 0) FROM sanlens.metrics WHERE site = {s:String} "
        "AND metric = 'volume.write_service_time_hist'",
        parameters={"s": site},
    ).first_row
    assert 0 < buckets <= 32 and zeros == 0 and dropped["no I/O in bucket"] > 0
    timeline = wait_until(
        lambda: (
            (
                rows := ch.query(
                    "SELECT firmware, valid_from FROM sanlens.topology FINAL "
                    "WHERE kind = 'array' AND array = {a:String} "
                    "ORDER BY valid_from",
                    parameters={"a": f"t{run_id}-af"},
                ).result_rows
            )
            and len(rows) == 2
            and rows
        ),
        60,
        "the array's firmware timeline",
    )
    assert [fw for fw, _ in timeline] == ["3.1.3", "3.2.1"]
    assert abs((timeline[1][1] - timeline[0][1]).total_seconds() - 30) < 0.01  # upgraded at 30 s
    paths = ch.command(
        "SELECT count() FROM sanlens.topology WHERE kind = 'path' AND site = {s:String}", parameters={"s": site}
    )
    assert paths == 2 * len(s.hosts)  # data and log disk per host
    truth_hosts = [json.loads(line) for line in (tmp_path / "truth" / "hosts.jsonl").read_text().splitlines()]
    assert {h["host"] for h in truth_hosts} == set(s.hosts)
    check_against_ground_truth(ch, site, f"t{run_id}", truth_hosts)


def check_against_ground_truth(ch, site: str, prefix: str, truth: list[dict]) -> None:
    """The normalized figures are the simulator's true ones: Perfmon's latency per interval exactly,
    the DMV latency from stall and count deltas within rounding, and the slow-draining port alone
    showing time at zero transmit credit."""
    host = f"{prefix}-sql1"
    true_read = {round(t["t"] * 1000): t["read_us"] for t in truth if t["host"] == host}
    perfmon = ch.query(
        "SELECT toUnixTimestamp64Milli(ts), value FROM sanlens.metrics WHERE site = {s:String} "
        "AND host = {h:String} AND disk = 'D:' AND metric = 'disk.read_latency'",
        parameters={"s": site, "h": host},
    ).result_rows
    assert len(perfmon) == len(true_read)
    for ts, value in perfmon:
        assert abs(value - true_read[ts]) < 0.01, (ts, value, true_read[ts])
    dmv = ch.query(
        "SELECT toUnixTimestamp64Milli(ts), value FROM sanlens.metrics WHERE site = {s:String} "
        "AND host = {h:String} AND metric = 'file.read_latency'",
        parameters={"s": site, "h": host},
    ).result_rows
    assert len(dmv) >= len(true_read) - 3  # baseline and the interval across the restart
    for ts, value in dmv:
        assert abs(value - true_read[ts]) / true_read[ts] < 0.01, (ts, value, true_read[ts])
    credit = dict(
        ch.query(
            "SELECT port, max(value) FROM sanlens.metrics WHERE site = {s:String} "
            "AND metric = 'port.tx_credit_zero' GROUP BY port",
            parameters={"s": site},
        ).result_rows
    )
    assert credit.pop("0/12") > 0 and credit and set(credit.values()) == {0.0}


# component -> (its fault, from, until: seconds into the scenario); "-gap" misses its first volume meanwhile
FAULTS = {
    "500": ("http_500", 10, 40),
    "cut": ("truncated", 20, 50),
    "gap": ("missing_volume", 20, 35),
    "sw": ("http_500", 30, 45),
}


def api_fault_scenario(prefix: str, site: str) -> dict:
    """Three arrays (one hybrid) and a switch whose APIs fail as FAULTS says, a host on each array."""
    arrays = [a for a in FAULTS if a != "sw"]
    fleet = {
        "name": site,
        "switches": [{"name": f"{prefix}-sw", "ports": 16}],
        "arrays": [
            {"name": f"{prefix}-{a}", "model": "M", "media": "hybrid" if a == "cut" else "ssd", "firmware": "3.1.3"}
            for a in arrays
        ],
        "hosts": [
            {"name": f"{prefix}-h{a}", "array": f"{prefix}-{a}", "workload": "oltp", "iops": 800} for a in arrays
        ],
    }
    events = [
        {"type": "api_fault", "at": at, "until": until, "switch" if c == "sw" else "array": f"{prefix}-{c}", "fault": f}
        for c, (f, at, until) in FAULTS.items()
    ]
    return {
        "name": "api-faults",
        "seed": 4,
        "interval_s": 5,
        "duration_s": 60,
        "volume_truth": True,
        "events": events,
        "customers": [{"name": f"c-{prefix}", "sites": [fleet]}],
    }


def test_malformed_api_answers_are_logged_by_telegraf_and_make_no_bad_samples(stack, ch, tmp_path, monkeypatch):
    """An array answering HTTP 500, one answering truncated JSON, a switch answering 500 and an array whose answers
    miss a volume for a while, polled by the stack's Telegraf: each fault is an error in Telegraf's log and no
    metric; every record Telegraf sent is out and counted; no sample comes from a failed answer; and the volume
    that went missing loses no I/O (the delta after the gap spans it)."""
    prefix, site = f"f{uuid.uuid4().hex[:6]}", f"api-{uuid.uuid4().hex[:6]}"
    # the times of the gap array's histogram answers: the first is the baseline its deltas start from, which
    # need not be the first answer of its other endpoints (the simulator can step between two polls of a round)
    histogram_answers, document = [], Endpoints.document

    def recording(self, path):
        doc, fault = document(self, path)
        if path.startswith(f"/arrays/{prefix}-gap/") and "vvhistograms" in path and fault is None:
            histogram_answers.append(doc["sampleTimeSec"])
        return doc, fault

    monkeypatch.setattr(Endpoints, "document", recording)
    (tmp_path / "faults.yaml").write_text(yaml.safe_dump(api_fault_scenario(prefix, site)))
    s = scenario_file.load(tmp_path / "faults.yaml")
    run = Run(s, tmp_path / "truth", config.KAFKA_BOOTSTRAP, speed=2.0)
    log = procs.log_file("telegraf")
    logged = log.stat().st_size if log.exists() else 0
    play_through_telegraf(run, f"faults-{prefix}")
    errors = [line for line in log.read_bytes()[logged:].decode(errors="replace").splitlines() if " E! " in line]
    for alias, error in (
        (f"{prefix}-500-array_vlun", "received status code 500"),
        (f"{prefix}-cut-array_vv_histogram", "invalid JSON provided"),
        (f"{prefix}-sw-brocade_fc_port", "received status code 500"),
    ):
        assert any(f"[inputs.http::{alias}]" in line and error in line for line in errors), (alias, errors[-5:])

    sent = sum(run.truth.records.values())
    counted = settle(
        lambda: ((c := counted_records(ch, site)).get("in") == sent and c.get("out") == sent, c), 120, quiet=60
    )
    assert counted == {"in": sent, "out": sent}
    start = run.start_s
    rows = ch.query(
        "SELECT if(array != '', array, switch), volume, port, metric, toUnixTimestamp64Milli(ts) / 1000 - {t:Float64}, "
        "value FROM sanlens.metrics WHERE site = {s:String} AND (array != '' OR switch != '')",
        parameters={"s": site, "t": start},
    ).result_rows
    # every sample names its volume or port, but for the hybrid array's capacity, which is the array's own
    bad = [r for r in rows if r[-1] < 0 or not (r[1] or r[2] or r[3].startswith("array.tier"))]
    assert rows and not bad, bad[:5]
    for component, (fault, since, until) in FAULTS.items():
        if fault != "missing_volume":
            times = {t for c, _, _, _, t, _ in rows if c == f"{prefix}-{component}"}
            assert times and not {t for t in times if since <= t < until}, (component, sorted(times))
    # the gap volume: no answer about it within the fault, and after it every I/O the array counted meanwhile
    gap = s.arrays[f"{prefix}-gap"].volumes[0].name
    samples = sorted(
        (t, v) for _, volume, _, m, t, v in rows if volume == gap and m.endswith("write_service_time_hist")
    )
    times = sorted({t for _, volume, _, _, t, _ in rows if volume == gap})
    _, since, until = FAULTS["gap"]
    assert times and not [t for t in times if since <= t < until] and max(times) >= until
    truth = [json.loads(line) for line in (tmp_path / "truth" / "volume_histograms.jsonl").read_text().splitlines()]
    # the deltas count the I/Os after the histogram's first answer, up to its last (the other endpoints' last
    # answers may be later: Telegraf's reload at the end can cut a round of polls short)
    first, last = min(histogram_answers) - start, max(t for t, _ in samples)
    expected = sum(
        sum(t["write"]["ios"].values())
        for t in truth
        if t["volume"] == gap and "write" in t and first < t["t"] - start <= last
    )
    assert sum(v for _, v in samples) == expected > 0


def counted_records(ch, site: str) -> dict[str, int]:
    return dict(
        ch.query(
            "SELECT outcome, sum(records) FROM sanlens.pipeline_accounting WHERE stage = 'normalize' "
            "AND site = {s:String} AND unit = 'records' GROUP BY outcome",
            parameters={"s": site},
        ).result_rows
    )
