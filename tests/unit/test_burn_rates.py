"""The burn-rate evaluator of the SLOs (pure logic, the Java class a Flink process table function will run): one SLO
on one entity, window by window, against a computation of the same burn rates in Python."""

from __future__ import annotations

import numpy as np
import pytest
from py4j.java_gateway import get_field

from slo import definitions
from tests.support import java_functions

W = 10_000  # ms: one window
T0 = 1_795_000_000_000 - 1_795_000_000_000 % 60_000
OBJECTIVE = 0.999


@pytest.fixture(scope="module")
def java():
    return java_functions().burnrates


def map_view():
    """A Flink MapView on its own HashMap, as a process table function's map state outside a job."""
    from pyflink.java_gateway import get_gateway

    return get_gateway().jvm.org.apache.flink.table.api.dataview.MapView()


def new_rings(java):
    """The rings over two map views, as the job keeps them."""
    return java.Rings(map_view(), map_view())


def rules() -> str:
    d = definitions.load(definitions.DEFAULT_FILE)
    return ",".join(f"{a.severity}:{a.burn_rate(d.period_days)}:{a.long_s}:{a.short_s}" for a in d.alerts)


def play(java, bad_shares, ios=6000.0):
    """Each share is the share of slow I/Os in one 10 s window; the alerts reported, as (minute, severity,
    state, burn rates)."""
    evaluator, budget, rings, out = java.BurnRates(rules(), 30), java.Budget(), new_rings(java), []
    for n, share in enumerate([*bad_shares, 0.0]):
        for a in evaluator.add(budget, rings, T0 + n * W, ios * (1 - share), ios, OBJECTIVE):
            at = (get_field(a, "at") - T0) // 60_000
            out.append((at, get_field(a, "severity"), get_field(a, "state"), list(get_field(a, "burnRates"))))
    return out


def minutes(n: float) -> int:
    return int(n * 6)


def test_a_healthy_entity_raises_nothing(java):
    assert play(java, [0.0001] * minutes(6 * 60)) == []


def test_every_io_slow_pages_within_a_minute_and_resolves_after(java):
    """Burn 14.4 over 1 h and 5 min at 99.9 %: 1.44 % of the hour's I/Os slow. After an hour of good I/Os, ten
    minutes of slow ones page at the end of the first slow minute; the page resolves once the 5-minute and
    30-minute windows are clean again, and no ticket outlives it by more than its own windows allow."""
    alerts = play(java, [0.0] * minutes(60) + [1.0] * minutes(10) + [0.0] * minutes(60))
    pages = [(m, state) for m, severity, state, _ in alerts if severity == "page"]
    assert pages[0] == (61, "firing")
    resolved = [m for m, state in pages if state == "resolved"]
    assert len(resolved) == 1 and 70 < resolved[0] <= 70 + 31
    assert all(state == "firing" for m, state in pages if m < resolved[0])


def test_a_slow_burn_raises_a_ticket_and_no_page(java):
    """0.4 % of I/Os slow for 8 hours: a burn rate of 4, above the tickets' 3 and 1, below the pages' 6 and 14.4."""
    alerts = play(java, [0.004] * minutes(8 * 60))
    assert {severity for _, severity, _, _ in alerts} == {"ticket"}
    assert alerts[-1][3][list(definitions.WINDOWS).index("3d")] == pytest.approx(4.0, rel=1e-6)


def test_burn_rates_are_the_windows_error_ratios_over_the_budget(java):
    """Random traffic with gaps, checked against the same sums in Python at every minute it reports."""
    rng = np.random.default_rng(3)
    n = minutes(5 * 60)
    total = rng.integers(0, 2000, n).astype(float)
    total[rng.random(n) < 0.1] = 0.0  # windows without I/O
    bad = np.floor(total * rng.beta(0.5, 20, n))
    evaluator, budget, rings = java.BurnRates("page:0.0:3600:300", 30), java.Budget(), new_rings(java)
    # rate 0: it reports every minute
    checked = 0
    for k in range(n + 1):
        g, t = (total[k] - bad[k], total[k]) if k < n else (0.0, 0.0)
        for a in evaluator.add(budget, rings, T0 + k * W, float(g), float(t), OBJECTIVE):
            closed = (get_field(a, "at") - T0) // W  # windows in the minutes closed so far
            for w, seconds in enumerate(definitions.WINDOWS.values()):
                lo = max(0, closed - seconds // 10)
                b_, t_ = bad[lo:closed].sum(), total[lo:closed].sum()
                expected = b_ / t_ / (1 - OBJECTIVE) if t_ else 0.0
                assert list(get_field(a, "burnRates"))[w] == pytest.approx(expected, rel=1e-9, abs=1e-12)
            checked += 1
    assert checked == n // 6


def test_the_rings_keep_an_hour_of_minutes_per_map_entry_and_wrap_after_three_days(java):
    """Four days of minutes, each with its own sums: the last 4,320 are read back slot by slot, older ones are
    overwritten, and the minutes' map holds 72 entries (blocks of 60), not one per minute."""
    minutes = map_view()
    rings = java.Rings(minutes, map_view())
    ring, played = 3 * 24 * 60, 4 * 24 * 60
    for m in range(played):
        rings.minute(m % ring, float(m), float(2 * m))
    slots = (0, 59, 60, 1439, 1440, ring - 1)
    last = [s + ring if s + ring < played else s for s in slots]  # the minute each slot holds last
    assert [list(rings.minute(s)) for s in slots] == [[float(m), float(2 * m)] for m in last]
    assert minutes.getMap().size() == 72 and list(rings.day(3)) == [0.0, 0.0]


def test_a_window_that_comes_late_counts_in_the_minute_being_gathered(java):
    evaluator, budget, rings = java.BurnRates(rules(), 30), java.Budget(), new_rings(java)
    evaluator.add(budget, rings, T0 + 120_000, 10.0, 10.0, OBJECTIVE)
    assert len(evaluator.add(budget, rings, T0, 0.0, 10.0, OBJECTIVE)) == 0
    assert get_field(budget, "minute") == (T0 + 120_000) // 60_000 and get_field(budget, "minuteTotal") == 20.0


def test_good_ios_interpolates_inside_the_bucket_the_threshold_falls_in(java):
    """A window's histogram is one row: its good I/Os per threshold, as the simulator's truth counts them
    (tests/slo_scenario.py), bucket by bucket; bucket 0 from 0 ms, 31 taken as (2^23, 2^24] ms."""
    from pyflink.java_gateway import get_gateway

    from tests.slo_scenario import good_share

    gw = get_gateway()

    def array(kind, values):
        out = gw.new_array(kind, len(values))
        for i, v in enumerate(values):
            out[i] = v
        return out

    buckets, ios = [0, 4, 5, 6, 8, 31], [10, 200, 300, 50, 7, 1]
    good, total = java.GoodIos(), java.TotalIos()
    jb = array(gw.jvm.java.lang.Integer, buckets)
    ji = array(gw.jvm.java.lang.Long, [gw.jvm.java.lang.Long(n) for n in ios])
    for threshold in (0.001, 0.0625, 0.09, 0.125, 0.2, 1.0, 2.0**24):
        expected = sum(n * good_share(b, threshold) for b, n in zip(buckets, ios, strict=True))
        assert good.eval(jb, ji, threshold) == pytest.approx(expected, abs=1e-9), threshold
    assert total.eval(ji) == sum(ios)
