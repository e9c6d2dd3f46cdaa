"""The incident detector of the breakdown job, isolated (pure logic, the Java class the job's process table
function runs): one contributor on one component along one path, window by window, against a baseline it
learns."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from py4j.java_gateway import get_field

from flink_jobs.breakdown.tables import Incidents
from tests.support import java_functions

W = 10_000  # ms: one window
T0 = 1_795_000_000_000
FIELDS = ("site", "severity", "startedAt", "lastWindow", "endedAt", "windows", "ios", "baselineUs", "excessUs")


@pytest.fixture(scope="module")
def java():
    return java_functions().breakdown


def map_view():
    """The detector's history as the function's state holds it: a map view (its own HashMap outside a job)."""
    from pyflink.java_gateway import get_gateway

    return get_gateway().jvm.org.apache.flink.table.api.dataview.MapView()


def detector(java, **changes):
    i = Incidents(**changes)
    return java.Detector(
        W,
        i.history_windows,
        i.warmup_windows,
        i.quantile,
        i.relative_margin,
        i.absolute_margin_us,
        i.open_after,
        i.close_after,
        80_000.0,
    )


def play(java, values, discards=0.0, ios=1000, **changes):
    """Each value is the path's part in one window; the incidents' states, in the order reported."""
    d, track, history, states = detector(java, **changes), java.Track(), map_view(), []
    for n, value in enumerate([*values, 0.0]):  # a last window's row judges the one before it
        state = d.add(track, history, window(n), float(value), ios, float(discards), "s")
        if state is not None:
            states.append(SimpleNamespace(**{f: get_field(state, f) for f in FIELDS}))
    return states


def window(n: int) -> int:
    return T0 + n * W


def test_a_steady_component_raises_nothing(java):
    assert play(java, [100.0] * 50) == []


def test_a_fault_opens_at_its_first_window_and_closes_at_the_first_normal_one(java):
    values = [100.0] * 20 + [600.0] * 10 + [100.0] * 10
    states = play(java, values)
    assert states[0].startedAt == window(20) and states[0].endedAt is None  # opened at its second window
    assert states[0].lastWindow == window(21)
    closed = states[-1]
    assert (closed.startedAt, closed.endedAt, closed.windows) == (window(20), window(30), 10)
    assert closed.baselineUs == pytest.approx(100.0) and closed.excessUs == pytest.approx(500.0)
    assert closed.ios == 10 * 1000 and closed.severity == "warning"
    assert [s.endedAt for s in states[:-1]] == [None] * (len(states) - 1)


def test_windows_lost_after_a_fault_do_not_stretch_it(java):
    """A window the joins lost (a part that came too late) is a gap, not a normal window: the incident ends
    where its last window above ends, not at the next window that arrives (CI once saw a slow drain's end
    three windows late)."""
    d, track, history, states = detector(java), java.Track(), map_view(), []
    values = [100.0] * 20 + [600.0] * 10 + [None] * 3 + [100.0] * 3  # windows 30-32 never arrive
    for n, value in enumerate(values):
        if value is not None and (state := d.add(track, history, window(n), value, 1000, 0.0, "s")) is not None:
            states.append(state)
    closed = states[-1]
    assert get_field(closed, "endedAt") == window(30) and get_field(closed, "windows") == 10


def test_one_window_above_the_baseline_is_a_blip_not_an_incident(java):
    assert play(java, [100.0] * 20 + [900.0] + [100.0] * 10) == []


def test_a_fault_still_going_at_the_end_stays_open(java):
    states = play(java, [100.0] * 20 + [400.0] * 15)
    assert states[-1].endedAt is None and states[-1].windows == 15


def test_a_window_delivered_twice_counts_once(java):
    """The rows of one window are one host window: once per version of its path (every run of ./sanlens demo
    publishes its fleet's paths again), and again if re-delivered. The last counts; an incident counts its I/Os
    once, not once per row."""
    values = [100.0] * 20 + [600.0] * 10 + [100.0] * 5
    d, track, history, states = detector(java), java.Track(), map_view(), []
    for n, value in enumerate([*values, 0.0]):
        for _ in range(2):
            if (state := d.add(track, history, window(n), value, 1000, 0.0, "s")) is not None:
                states.append(SimpleNamespace(**{f: get_field(state, f) for f in FIELDS}))
    assert states == play(java, values)
    assert states[-1].ios == 10 * 1000 and d.baseline(track) == pytest.approx(100.0)


def test_a_slow_climb_is_not_learnt_as_the_baseline(java):
    """The consolidation knee: service times creep up before they climb; the baseline is a low quantile of
    the history, so the creep does not lift it."""
    creep = [300.0 + 2 * n for n in range(40)]  # +80 us over 40 windows
    states = play(java, [300.0] * 20 + creep + [900.0] * 10)
    assert states and states[0].baselineUs == pytest.approx(300.0, abs=10)


def test_nothing_is_judged_before_the_warm_up(java):
    assert play(java, [5000.0] * 3 + [100.0] * 20) == []


def test_margins_keep_small_moves_quiet(java):
    """Above the baseline by less than 25% or less than 20 us is no incident: a firmware upgrade that
    moves service times, or the noise of a busy hour."""
    assert play(java, [100.0] * 20 + [118.0] * 20) == []  # +18%
    assert play(java, [20.0] * 20 + [38.0] * 20) == []  # +90%, but +18 us


def test_discards_make_a_fabric_incident_severe(java):
    states = play(java, [40.0] * 20 + [900.0] * 5 + [40.0] * 5, discards=3.0)
    assert states and all(s.severity == "severe" for s in states)


def test_a_row_of_a_window_already_judged_is_ignored(java):
    d, track, history = detector(java), java.Track(), map_view()
    for n in range(10):
        d.add(track, history, window(n), 100.0, 1000, 0.0, "s")
    assert d.add(track, history, window(3), 99_999.0, 1000, 0.0, "s") is None
    assert d.baseline(track) == pytest.approx(100.0)


def test_the_history_takes_normal_windows_thirty_at_a_time_once_it_has_thirty(java):
    """The ring is read and sorted once in 30 windows (its map view is read only then): the baseline follows
    the history up to 30 windows late."""
    d, track, history = detector(java), java.Track(), map_view()
    for n, value in enumerate([100.0] * 30 + [50.0] * 30):
        d.add(track, history, window(n), value, 1000, 0.0, "s")  # judges windows 0 to 58
    assert d.baseline(track) == pytest.approx(100.0)  # 29 windows of 50 still gathered apart
    d.add(track, history, window(60), 50.0, 1000, 0.0, "s")
    assert d.baseline(track) == pytest.approx(50.0)
