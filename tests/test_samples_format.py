"""The jobs that read telemetry.samples decode only the metrics they name (the format `sanlens-samples`,
flink-jobs/common/java/): a metric their SQL filters on but the list leaves out would never reach them.
From Flink's own planner, no stack needed."""

from __future__ import annotations

import importlib
import re

import pytest

from flink_jobs.normalize import catalog
from tests.support import job_plan

CATALOG_METRICS = {f["metric"] for m in catalog.load()["measurements"].values() for f in m["fields"].values()}


@pytest.mark.parametrize("name", ["histograms", "breakdown", "tiering"])
def test_every_metric_a_job_filters_on_is_one_it_decodes(monkeypatch, name):
    tables = importlib.import_module(f"flink_jobs.{name}.tables")
    plan = job_plan(monkeypatch, name)
    named = set(re.findall(r"'([a-z0-9_]+\.[a-z0-9_]+)'", plan)) & CATALOG_METRICS
    assert named, f"{name}: no catalog metric in the plan"
    assert named <= set(tables.METRICS), (
        f"{name} filters on {sorted(named - set(tables.METRICS))} but never decodes them"
    )
