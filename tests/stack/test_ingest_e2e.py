"""Simulator -> the real Telegraf (socket listener + inputs.http pollers) -> Kafka -> normalize job ->
loader -> ClickHouse, for a small fleet: every record Telegraf sent is accounted for, exactly."""

from __future__ import annotations

import json
import uuid

from ingest.simulator import scenario as scenario_file
from ingest.simulator.run import Run
from sanlensctl import config
from tests import scenarios
from tests.support import play_through_telegraf, wait_until

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
