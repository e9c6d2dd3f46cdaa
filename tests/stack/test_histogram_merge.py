"""Property: service-time histograms merge by adding counts. However the per-window histograms of a
set of latencies are grouped and merged (per series, per period, per fleet dimension), the merged
histogram has the same total and gives the same percentiles (serviceTimeQuantile, the one function
the marts, Grafana and the report use, run in ClickHouse) as one histogram built from all the samples;
and each percentile is within its bucket's width of the exact percentile of the raw latencies."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest import buckets

QUANTILES = (0.5, 0.9, 0.99, 0.999)


def histogram(latencies) -> dict[int, int]:
    counts: dict[int, int] = {}
    for ms in latencies:
        counts[buckets.bucket_of(ms)] = counts.get(buckets.bucket_of(ms), 0) + 1
    return counts


def quantiles_sql(histograms: list[dict[int, int]], groups: list[int]) -> str:
    """Merge the histograms inside each group first, then the groups, as rollups and marts do."""
    rows = ", ".join(f"({g}, {b}, {c})" for h, g in zip(histograms, groups) for b, c in h.items())
    qs = ", ".join(f"serviceTimeQuantile(m.1, m.2, {q})" for q in QUANTILES)
    return (
        f"SELECT arraySum(m.2), {qs} FROM (SELECT sumMap(g.1, g.2) AS m FROM ("
        f"SELECT sumMap([bucket], [ios]) AS g FROM values('grp UInt32, bucket UInt8, ios UInt64', {rows}) "
        f"GROUP BY grp))"
    )


latencies = st.lists(st.floats(min_value=0.001, max_value=5000, allow_nan=False), min_size=1, max_size=400)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), samples=latencies)
def test_merging_in_any_grouping_equals_one_histogram_of_all_samples(ch, data, samples):
    windows = data.draw(st.lists(st.integers(0, 9), min_size=len(samples), max_size=len(samples)))
    per_window = [histogram([ms for ms, w in zip(samples, windows) if w == k]) for k in sorted(set(windows))]
    grouping = data.draw(st.lists(st.integers(0, 3), min_size=len(per_window), max_size=len(per_window)))

    merged = ch.query(quantiles_sql(per_window, grouping)).result_rows[0]
    whole = ch.query(quantiles_sql([histogram(samples)], [0])).result_rows[0]
    assert merged[0] == whole[0] == len(samples)
    assert merged[1:] == whole[1:]

    raw = np.sort(np.array(samples))
    for q, estimate in zip(QUANTILES, whole[1:]):
        exact = float(np.quantile(raw, q, method="inverted_cdf"))
        b = buckets.bucket_of(exact)
        lower, upper = buckets.lower_ms(b), buckets.upper_ms(b)
        assert lower <= estimate <= upper or math.isclose(estimate, upper), (q, exact, estimate)
        assert abs(estimate - exact) <= upper - lower
