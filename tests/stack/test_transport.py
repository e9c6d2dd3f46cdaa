"""The array's transport (FC or iSCSI) and the host's multipath policy as dimensions of the topology (issue 42, item 6):
set in the scenario, published with each path, simulated (iSCSI's TCP/IP stacks cost latency.ISCSI_STACK_US more per
I/O), and shown: the dbt view sanlens_marts.latency_by_transport and `./sanlens explain`, checked against the truth of
the transport scenario (tests/transport_scenario.py: two all-flash arrays alike but for their transport, two hosts on
each, one of each pair round robin and one least queue depth)."""

from __future__ import annotations

import pytest

from ingest.simulator import formats, latency
from ingest.simulator import scenario as scenario_file
from ingest.simulator.fleet import Fleet
from tests import scenarios
from tests.support import printed_tables, sanlens

PARTS = ("host_queueing_us", "fabric_us", "array_us", "unexplained_us")
# The host measures each window's average to the tenth of a µs and the array its service time to 0.1 µs; the
# truth's I/O weights are its rates where the pipeline's are the window's counts: 0.5 % of what the host measured
# covers both. What the transport adds is a difference of two such figures: 1 µs.
MEASURED_SHARE = 0.005
TRANSPORT_US = 1.0


def scenario_of(tmp_path, text: str) -> scenario_file.Scenario:
    (tmp_path / "s.yaml").write_text(text)
    return scenario_file.load(tmp_path / "s.yaml")


def test_a_scenario_that_names_neither_attaches_by_fc_load_balanced_round_robin(tmp_path):
    s = scenario_of(tmp_path, scenarios.text("breakdown", id="x"))
    assert {a.transport for a in s.arrays.values()} == {"fc"}
    assert {(h.transport, h.multipath_policy) for h in s.hosts.values()} == {("fc", "round_robin")}


def test_a_host_reaches_its_array_by_the_array_s_transport_unless_it_names_its_own(tmp_path):
    text = scenarios.text("transport", id="x").replace(
        "databases: [db4],", "databases: [db4], transport: fc,"
    )  # sql4 reaches the iSCSI array by FC (a unified array serves both)
    s = scenario_of(tmp_path, text)
    transports = {name: h.transport for name, h in s.hosts.items()}
    assert transports == {"x-sql1": "fc", "x-sql2": "fc", "x-sql3": "iscsi", "x-sql4": "fc"}


@pytest.mark.parametrize(
    "old, new, refused",
    [
        ("transport: iscsi}", "transport: infiniband}", "unknown transport 'infiniband'"),
        ("least_queue_depth", "least_recently_used", "unknown multipath_policy 'least_recently_used'"),
    ],
)
def test_a_transport_or_policy_the_simulator_does_not_know_is_refused(tmp_path, old, new, refused):
    with pytest.raises(ValueError, match=refused):
        scenario_of(tmp_path, scenarios.text("transport", id="x").replace(old, new, 1))


def test_an_iscsi_path_costs_the_tcp_ip_stacks_more_than_fc_and_nothing_else(tmp_path):
    """sql1 (FC) and sql3 (iSCSI) run the same workload on arrays alike but for their transport."""
    fleet = Fleet(scenario_of(tmp_path, scenarios.text("transport", id="x")), 0.0)
    fleet.step()
    fc, iscsi = fleet.hosts["x-sql1"], fleet.hosts["x-sql3"]
    assert (fc.transport_us, iscsi.transport_us) == (0.0, latency.ISCSI_STACK_US)
    assert iscsi.array_read_us == fc.array_read_us and iscsi.fabric_us == fc.fabric_us
    assert iscsi.read_us - fc.read_us == pytest.approx(latency.ISCSI_STACK_US, abs=0.01)
    assert iscsi.write_us - fc.write_us == pytest.approx(latency.ISCSI_STACK_US, abs=0.01)


def test_each_path_is_published_with_its_transport_and_its_host_s_policy(tmp_path):
    fleet = Fleet(scenario_of(tmp_path, scenarios.text("transport", id="x")), 0.0)
    paths = {(v["host"], v["disk"]): v for _, v in formats.topology(fleet) if v["kind"] == "path"}
    expected = {
        "x-sql1": ("fc", "round_robin"),
        "x-sql2": ("fc", "least_queue_depth"),
        "x-sql3": ("iscsi", "round_robin"),
        "x-sql4": ("iscsi", "least_queue_depth"),
    }
    assert {k: (p["transport"], p["multipath_policy"]) for k, p in paths.items()} == {
        (host, disk): figures for host, figures in expected.items() for disk in ("D:", "L:")
    }


# -- against the truth, through the stack ----------------------------------------------------------------------------


def by_transport(ch, site: str, group_by: str) -> dict[tuple, dict]:
    """The view's figures over the whole run, I/O-weighted, per transport (and policy), direction."""
    keys = "transport, multipath_policy" if group_by == "policy" else "transport"
    sql = f"""
SELECT {keys}, direction, groupUniqArray(t.host) AS hosts, sum(t.ios) AS ios,
    sum(t.host_us * t.ios) / sum(t.ios) AS host_us,
    {", ".join(f"sum(t.{p} * t.ios) / sum(t.ios) AS {p}" for p in PARTS)}
FROM sanlens_marts.latency_by_transport AS t
WHERE site = {{s:String}}
GROUP BY {keys}, direction"""
    rows = ch.query(sql, parameters={"s": site}).named_results()
    return {tuple(r[k.strip()] for k in keys.split(",")) + (r["direction"],): r for r in rows}


def truth_by_transport(played, windows: set[int]) -> dict[tuple, dict]:
    """The truth over the windows the breakdown has, I/O-weighted by the truth's rates, per transport and direction:
    what the hosts measured, the array's part and what the transport added."""
    sums = {}
    for f in played.truth.values():
        if f["t"] not in windows:
            continue
        for direction in ("read", "write"):
            weight = f[f"{direction}_iops"]
            acc = sums.setdefault((f["transport"], direction), {"weight": 0.0, "host": 0.0, "array": 0.0, "tr": 0.0})
            acc["weight"] += weight
            acc["host"] += weight * f[f"{direction}_us"]
            acc["array"] += weight * f[f"array_{direction}_us"]
            acc["tr"] += weight * f["transport_us"]
    return {
        key: {
            "host_us": a["host"] / a["weight"],
            "array_us": a["array"] / a["weight"],
            "transport_us": a["tr"] / a["weight"],
        }
        for key, a in sums.items()
    }


@pytest.fixture(scope="module")
def figures(transport_played, ch):
    site = transport_played.site
    windows = {
        r[0]
        for r in ch.query(
            "SELECT DISTINCT toUnixTimestamp(window_start) FROM sanlens.path_latency FINAL WHERE site = {s:String}",
            parameters={"s": site},
        ).result_rows
    }
    return by_transport(ch, site, "transport"), truth_by_transport(transport_played, windows)


@pytest.mark.stack
def test_per_transport_what_the_hosts_measured_and_the_array_s_part_are_the_truth_s(figures):
    shown, truth = figures
    assert set(shown) == set(truth) == {(t, d) for t in ("fc", "iscsi") for d in ("read", "write")}
    for key, row in shown.items():
        assert row["host_us"] == pytest.approx(truth[key]["host_us"], rel=MEASURED_SHARE), (key, row, truth[key])
        assert row["array_us"] == pytest.approx(truth[key]["array_us"], rel=MEASURED_SHARE), (key, row, truth[key])
        assert sum(row[p] for p in PARTS) == pytest.approx(row["host_us"], rel=1e-9)


@pytest.mark.stack
def test_an_iscsi_path_adds_the_planted_stack_cost_above_the_array_and_it_shows_unexplained(figures):
    """FC and iSCSI differ by what the truth planted above the array (the hosts and fabric alike); the breakdown has no
    part for the TCP/IP stacks, so on iSCSI the cost is what it leaves unexplained, and on FC nothing is."""
    shown, truth = figures
    for direction in ("read", "write"):
        fc, iscsi = shown[("fc", direction)], shown[("iscsi", direction)]
        planted = truth[("iscsi", direction)]["transport_us"] - truth[("fc", direction)]["transport_us"]
        assert planted == latency.ISCSI_STACK_US
        above = (iscsi["host_us"] - iscsi["array_us"]) - (fc["host_us"] - fc["array_us"])
        assert above == pytest.approx(planted, abs=TRANSPORT_US), (direction, fc, iscsi)
        assert iscsi["unexplained_us"] == pytest.approx(planted, abs=TRANSPORT_US), iscsi
        assert abs(fc["unexplained_us"]) < TRANSPORT_US, fc
        for part in ("host_queueing_us", "fabric_us"):
            assert iscsi[part] == pytest.approx(fc[part], abs=TRANSPORT_US), (part, fc, iscsi)


@pytest.mark.stack
def test_each_transport_and_policy_is_its_hosts_and_no_window_is_left_out(transport_played, ch):
    played, site = transport_played, transport_played.site
    shown = by_transport(ch, site, "policy")
    expected = {
        (h.transport, h.multipath_policy, d): {name}
        for name, h in played.scenario.hosts.items()
        for d in ("read", "write")
    }
    assert {key: set(row["hosts"]) for key, row in shown.items()} == expected
    all_ios = "SELECT sum(ios) FROM sanlens.path_latency FINAL WHERE site = {s:String}"
    assert sum(r["ios"] for r in shown.values()) == ch.command(all_ios, parameters={"s": site})


@pytest.mark.stack
def test_explain_names_each_path_s_transport_and_policy(transport_played):
    for host, transport, policy in (("sql2", "fc", "least_queue_depth"), ("sql3", "iscsi", "round_robin")):
        name = f"{transport_played.id}-{host}"
        out = sanlens("explain", name)
        assert out.returncode == 0, out.stdout + out.stderr
        tables = printed_tables(out.stdout)
        (paths,) = [rows for title, rows in tables.items() if title.startswith("its paths in the inventory at")]
        volumes = {f"{transport_played.id}-{'fc' if transport == 'fc' else 'is'}:{name}_{r}" for r in ("data", "log")}
        assert [(r["disk"], r["transport"], r["multipath policy"]) for r in paths] == [
            ("D:", transport, policy),
            ("L:", transport, policy),
        ], out.stdout
        assert {r["volume"] for r in paths} == volumes
