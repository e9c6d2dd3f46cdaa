"""Host health beside latency (issue 42, item 5): % Processor Time and SQL Server's transactions/s in explain's host
view, and the HBA queue depth flagged where it differs from the fleet's setting (the value most of the customer's HBA
ports have), in explain, the dbt views and the latency dashboard, against the host-health scenario's truth
(tests/host_health_scenario.py: three hosts at 256, one at 32 with a busier CPU)."""

from __future__ import annotations

import statistics

import pytest

from ingest.simulator import formats
from ingest.simulator import scenario as scenario_file
from ingest.simulator.fleet import TIERING_BATCH_GAIN, Fleet
from tests.host_health_scenario import ODD_QUEUE_DEPTH, scenario_text
from tests.support import ROOT, printed_tables, sanlens

# The CPU gauge travels as sent and explain prints one decimal: 0.1 points covers the rounding. Transactions/s is a
# counter's rate: each interval's rate is the truth's exactly, but a counter's first sample has none, so the mean is
# over all intervals but the first; 1 % leaves room for that one interval of 60 and the printed decimal.
CPU_POINTS = 0.1
TRANSACTIONS_SHARE = 0.01
LOAD_TITLE = "host health, % Processor Time and SQL Server's transactions/s"
QUEUE_TITLE = "HBA queue depth against its fleet's setting"


def played_fleet(tmp_path) -> Fleet:
    (tmp_path / "s.yaml").write_text(scenario_text("t"))
    fleet = Fleet(scenario_file.load(tmp_path / "s.yaml"), 0.0)
    fleet.step()
    return fleet


def test_the_simulator_sends_each_host_s_cpu_and_queue_depth_as_it_sets_them(tmp_path):
    """% Processor Time is the host's base plus 0.04 points per batch request/s (one per 8 I/Os); the HBA's queue
    depth is the scenario's, in the host's samples and its paths' topology alike; transactions/s is the DMV counter's
    increase per second."""
    fleet = played_fleet(tmp_path)
    expected = {"t-sql1": (45.0, 256), "t-sql2": (35.0, 256), "t-sql3": (30.0, 256), "t-sql4": (60.0, ODD_QUEUE_DEPTH)}
    for name, (cpu, depth) in expected.items():
        host, figures = fleet.s.hosts[name], fleet.hosts[name]
        sent = {m: fields for m, _, fields in formats.host_metrics(fleet, host)}
        assert figures.cpu_percent == pytest.approx(cpu) == sent["win_cpu"]["Percent_Processor_Time"]
        assert sent["hba_port"]["queue_depth"] == depth
        counters = fleet.sql[name]
        assert figures.transactions_per_s * fleet.s.interval_s == sum(
            counters[(db, "Transactions/sec")] for db in host.databases
        )
    paths = [v for _, v in formats.topology(fleet) if v["kind"] == "path"]
    assert {(p["host"], p["queue_depth"]) for p in paths} == {(n, d) for n, (_, d) in expected.items()}


def test_a_host_whose_volume_auto_tiers_does_more_batches_and_its_cpu_follows():
    """The demo's acme-sql3: as auto-tiering moves its data volume's hot pages to Tier 0 (from 200 s), its batch
    requests/s rise by the planted gain, at the same IOPS, and its CPU above the base rises with them."""
    s = scenario_file.load(ROOT / "ingest" / "scenarios" / "demo.yaml")
    fleet, host = Fleet(s, 0.0), s.hosts["acme-sql3"]
    fleet.step()
    before = fleet.hosts[host.name].cpu_percent - host.cpu_base_percent
    while fleet.t < 200 + 10 * 180:  # ten of the move's time constants: at its target
        fleet.step()
    after = fleet.hosts[host.name].cpu_percent - host.cpu_base_percent
    assert after / before == pytest.approx(1 + TIERING_BATCH_GAIN, rel=0.02)


def explained(host: str) -> dict[str, list[dict]]:
    out = sanlens("explain", host)
    assert out.returncode == 0, out.stdout + out.stderr
    tables = printed_tables(out.stdout)
    return {title.split(":")[0].split(" (")[0]: rows for title, rows in tables.items()} | {"text": out.stdout}


@pytest.fixture(scope="module")
def explanations(host_health_played) -> dict[str, dict]:
    return {name: explained(name) for name in host_health_played.scenario.hosts}


def test_explain_flags_the_host_whose_queue_depth_differs_from_the_fleet_s_and_no_other(
    host_health_played, explanations
):
    odd = f"{host_health_played.id}-sql4"
    for name, host in host_health_played.scenario.hosts.items():
        [port] = explanations[name][QUEUE_TITLE]
        assert port["HBA port"] == host.host_port, explanations[name]["text"]
        assert (port["queue depth"], port["fleet's setting"]) == (str(host.queue_depth), "256")
        assert port["HBA ports at it"] == f"3 of 4 of {host_health_played.customer}"
        expected = f"DIFFERS: {ODD_QUEUE_DEPTH}, not 256" if name == odd else "no"
        assert port["differs"] == expected, explanations[name]["text"]


def test_explain_shows_each_host_s_cpu_and_transactions_as_the_simulator_planted_them(host_health_played, explanations):
    seen = {}
    for name, truth in host_health_played.truth.items():
        [row] = explanations[name][LOAD_TITLE]  # no incident: one part, the whole span
        assert row["part of the span"] == "over the span", explanations[name]["text"]
        cpu = statistics.fmean(t["cpu_percent"] for t in truth)
        transactions = statistics.fmean(t["transactions_per_s"] for t in truth[1:])
        seen[name] = (row["% processor time"], row["transactions/s"], round(cpu, 2), round(transactions, 2))
        assert float(row["% processor time"]) == pytest.approx(cpu, abs=CPU_POINTS), seen[name]
        assert float(row["transactions/s"]) == pytest.approx(transactions, rel=TRANSACTIONS_SHARE), seen[name]
        assert int(row["samples"]) == len(truth)
    odd = f"{host_health_played.id}-sql4"
    assert float(seen[odd][0]) > 50 > max(float(v[0]) for n, v in seen.items() if n != odd), seen
    print(seen)


def test_the_views_flag_the_same_port_and_carry_the_same_figures(host_health_played, ch):
    """hba_queue_depths: one row per HBA port, the odd one flagged; host_health: per minute, the CPU and transactions
    whose means are the truth's."""
    params = {"c": host_health_played.customer}
    ports = list(
        ch.query(
            "SELECT * FROM sanlens_marts.hba_queue_depths WHERE customer = {c:String} ORDER BY host", parameters=params
        ).named_results()
    )
    odd = f"{host_health_played.id}-sql4"
    assert [(p["host"], p["differs"]) for p in ports] == [
        (name, int(name == odd)) for name in sorted(host_health_played.scenario.hosts)
    ]
    assert {(p["fleet_queue_depth"], p["ports_at_setting"], p["fleet_ports"]) for p in ports} == {(256, 3, 4)}
    minutes = ch.query(
        """SELECT host, avg(cpu_percent), sum(transactions_per_s * samples) / sum(samples), max(hba_queue_depth_differs)
        FROM sanlens_marts.host_health AS h
        INNER JOIN (
            SELECT host, toStartOfMinute(ts) AS minute, uniqExact(ts) AS samples FROM sanlens.metrics
            WHERE site = {s:String} AND metric = 'sql.transactions' GROUP BY host, minute
        ) AS n ON h.host = n.host AND h.minute = n.minute
        WHERE h.site = {s:String} GROUP BY host ORDER BY host""",
        parameters={"s": host_health_played.site},
    ).result_rows
    assert [m[0] for m in minutes] == sorted(host_health_played.scenario.hosts)
    for host, cpu, transactions, differs in minutes:
        truth = host_health_played.truth[host]
        assert cpu == pytest.approx(statistics.fmean(t["cpu_percent"] for t in truth), abs=CPU_POINTS)
        expected = statistics.fmean(t["transactions_per_s"] for t in truth[1:])
        assert transactions == pytest.approx(expected, rel=TRANSACTIONS_SHARE)
        assert differs == int(host == odd)
