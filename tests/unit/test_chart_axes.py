"""The report's log axes of milliseconds: labelled at 1, 2 and 5 of each decade with their values, tenths of a ms
as 0.1, 0.2, 0.5 (issue 42: plotly's own labels read "3" for 0.3 ms), in the load curves and the tiers alike."""

from __future__ import annotations

from sanlensctl import load_curves
from sanlensctl.chart_axes import SERVICE_TICKS_MS, log_ms_axis


class Result:
    def __init__(self, rows: list[dict]):
        self.rows = rows

    def named_results(self):
        return iter(self.rows)

    @property
    def result_rows(self) -> list[tuple]:
        return [tuple(r.values()) for r in self.rows]


class Client:
    """Answers every query with the same rows: enough for the charts' shapes."""

    def __init__(self, rows: list[dict]):
        self.rows = rows

    def query(self, sql: str, parameters=None) -> Result:
        return Result(self.rows)


def test_every_tick_below_a_millisecond_is_labelled_with_its_decimals():
    axis = log_ms_axis()
    labels = dict(zip(axis["tickvals"], axis["ticktext"], strict=True))
    assert axis["type"] == "log" and axis["tickvals"] == SERVICE_TICKS_MS
    assert [labels[ms] for ms in SERVICE_TICKS_MS if 0.1 <= ms <= 5] == ["0.1", "0.2", "0.5", "1", "2", "5"]
    assert all(text.startswith("0.") for ms, text in labels.items() if ms < 1)


def test_the_load_curves_log_axes_are_the_labelled_ones():
    array = {"array": "a1", "knee_iops": 900.0, "knee_mbps": 7.0, "knee_service_ms": 0.4}
    rows = [{"host": "h1", "array": "a1", "iops": 100.0 * n, "mbps": n, "service_ms": 0.3, "batch_requests": n,
             "latency_ms": 0.35} for n in range(1, 10)]  # fmt: skip
    figures = [load_curves.array_curves(Client(rows), [array]), load_curves.host_curves(Client(rows), ["a1"], 1)]
    axes = [axis for fig in figures for axis in fig.select_yaxes()]
    assert len(axes) == 3
    for axis in axes:
        assert axis.type == "log" and list(axis.tickvals) == SERVICE_TICKS_MS, axis
        assert list(axis.ticktext) == log_ms_axis()["ticktext"], axis
