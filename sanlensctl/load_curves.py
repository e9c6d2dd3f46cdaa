"""The report's load curves: the arrays whose service time bends (the busiest first, then the busiest of the rest)
as IOPS and MB/s against service time, one point per sample, the knee marked; and the hosts on them as batch
requests/s against the latency they measure. The SQL is the "Load and latency" dashboard's
(queries/load_curve.py)."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from queries import load_curve
from sanlensctl.chart_axes import log_ms_axis

HOST_WINDOW = "toStartOfInterval(ts, toIntervalSecond(10))"
NOTE = """<p>Each point is one sample of an array: the IOPS (left) and MB/s (right) of its volumes summed against
their service time, I/O-weighted (log scale). The knee (red) is the load where a 1% rise in IOPS costs 1% more
service time, found as the load bin (5% of the array's busiest sample) with the highest IOPS per ms of service
time: below it added load buys more throughput than it costs latency, above it less. An array whose curve does not
bend has none; one that saturates shows its points in a column at its capacity, its service time climbing while
its throughput stays. The hosts' chart shows what the hosts on those arrays measured: SQL Server's batch
requests/s against the latency of their disks.</p>"""


def chosen_arrays(client, top: int) -> list[dict]:
    """The arrays' knees over everything the store holds: those with a knee first, the busiest first."""
    knees = client.query(load_curve.array_knees(load_curve.array_intervals())).named_results()
    return sorted(knees, key=lambda k: (k["knee_iops"] is None, -k["peak_iops"]))[:top]


def array_curves(client, arrays: list[dict]) -> go.Figure:
    names = [a["array"] for a in arrays]
    where = "array IN {arrays:Array(String)}"
    rows = list(
        client.query(load_curve.array_intervals(where) + " ORDER BY ts", parameters={"arrays": names}).named_results()
    )
    titles = [
        f"{a['array']}: {side}{'' if a['knee_iops'] else ' (no knee)'}" for a in arrays for side in ("IOPS", "MB/s")
    ]
    fig = make_subplots(rows=len(arrays), cols=2, subplot_titles=titles, vertical_spacing=0.25 / len(arrays))
    for i, a in enumerate(arrays, start=1):
        mine = [r for r in rows if r["array"] == a["array"]]
        for col, load in ((1, "iops"), (2, "mbps")):
            fig.add_trace(
                go.Scatter(
                    x=[r[load] for r in mine],
                    y=[r["service_ms"] for r in mine],
                    mode="markers",
                    marker={"size": 5, "color": "#1f77b4", "opacity": 0.6},
                    name="samples",
                    showlegend=i == 1 and col == 1,
                ),
                row=i,
                col=col,
            )
            if a["knee_iops"] is not None:
                label = f"knee: {a['knee_iops']:,.0f} IOPS" if load == "iops" else f"knee: {a['knee_mbps']:,.0f} MB/s"
                fig.add_trace(
                    go.Scatter(
                        x=[a[f"knee_{load}"]],
                        y=[a["knee_service_ms"]],
                        mode="markers+text",
                        marker={"size": 16, "color": "red", "symbol": "star"},
                        text=[f"{label}, {a['knee_service_ms']:.2f} ms"],
                        textposition="middle left",
                        name="knee",
                        showlegend=i == 1 and col == 1,
                    ),
                    row=i,
                    col=col,
                )
            fig.update_xaxes(title_text="IOPS" if load == "iops" else "MB/s", rangemode="tozero", row=i, col=col)
            fig.update_yaxes(log_ms_axis(title_text="service time (ms)", range=log_range(mine)), row=i, col=col)
    fig.update_layout(title="Load curves: service time against load, per array sample", height=360 * len(arrays))
    return fig


def log_range(rows: list[dict]) -> list[float]:
    """At least a decade of service time around the samples', so that a flat curve's noise looks flat."""
    times = [math.log10(r["service_ms"]) for r in rows if r["service_ms"] > 0] or [0.0]
    middle, half = (min(times) + max(times)) / 2, max(0.5, (max(times) - min(times)) / 2 + 0.1)
    return [middle - half, middle + half]


def host_curves(client, arrays: list[str], top: int) -> go.Figure:
    hosts = [
        r[0] for r in client.query(load_curve.HOSTS_ON_ARRAYS, parameters={"arrays": arrays, "n": top}).result_rows
    ]
    rows = client.query(
        load_curve.host_intervals(HOST_WINDOW, "host IN {hosts:Array(String)}") + " ORDER BY host, time",
        parameters={"hosts": hosts},
    ).named_results()
    fig = go.Figure()
    by_host: dict[str, list[dict]] = {}
    for r in rows:
        by_host.setdefault(r["host"], []).append(r)
    for host, mine in by_host.items():
        fig.add_trace(
            go.Scatter(
                x=[r["batch_requests"] for r in mine],
                y=[r["latency_ms"] for r in mine],
                mode="markers",
                marker={"size": 5, "opacity": 0.6},
                name=host,
            )
        )
    fig.update_layout(
        title="Hosts on those arrays: latency against batch requests/s, per 10 s",
        xaxis_title="batch requests/s",
        yaxis=log_ms_axis(title_text="host latency (ms, Perfmon, I/O-weighted)"),
        height=450,
    )
    return fig


def charts(client, said_empty, top: int) -> dict[str, go.Figure]:
    arrays = chosen_arrays(client, top)
    if not arrays:
        return {
            "load-curves": said_empty(
                go.Figure(layout_title_text="Load curves"), "No array has reported IOPS and service times yet."
            )
        }
    return {
        "load-curves": array_curves(client, arrays),
        "load-curves-hosts": host_curves(client, [a["array"] for a in arrays], top),
    }
