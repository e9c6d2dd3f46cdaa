"""The two sides of the whole suite's run (sanlensctl/suite.py): the stack tests' files that each of two pytest
processes runs, side by side on one test stack, while the CPU would otherwise wait on the stack. On one side:
- the files that play the same session scenarios (conftest.py, the *_scenario modules): none is played twice;
- the files that play through the stack's Telegraf (`./sanlens demo`, tests.support.polled_by_telegraf): its
  reload for one test's pollers breaks another's connection to its listener.
The sides are balanced by the durations of a whole run (docs/benchmarks.md, "The test suite"). The tests marked
`exclusive` run on a stack of their own, whichever side lists their file."""

from __future__ import annotations

from sanlensctl import suite

SIDES = (
    {
        "test_breakdown.py",
        "test_grafana_alert_rules.py",
        "test_grafana_dashboards.py",
        "test_host_health.py",
        "test_install_base.py",
        "test_report.py",
        "test_slo.py",
        "test_tiering.py",
        "test_transport.py",
        "test_access.py",
        "test_demo.py",
        "test_ingest_e2e.py",
        "test_backlog.py",
        "test_crash_recovery.py",
        "test_dashboard_load.py",
        "test_isolation.py",
    },
    {
        "test_alertmanager.py",
        "test_cli.py",
        "test_embedded_clickhouse.py",
        "test_firmware_rollout_acceptance.py",
        "test_flink_cluster.py",
        "test_histogram_merge.py",
        "test_histograms_job.py",
        "test_load_curve.py",
        "test_loader.py",
        "test_pipeline_path.py",
        "test_rollups.py",
        "test_supervision.py",
        "test_tiers.py",
        "test_replay.py",
        "test_normalize.py",
        "test_kafka_access.py",
        "test_fuzz_normalize.py",
    },
)


def process_of(item) -> str:
    """The process of the whole suite's run that runs this stack test: side 1, side 2 or alone."""
    if item.get_closest_marker("exclusive"):
        return suite.ALONE
    for name, files in zip(suite.SIDES, SIDES, strict=True):
        if item.path.name in files:
            return name
    raise LookupError(
        f"{item.path.name} is on neither side of tests/shards.py: add it to the side it shares scenarios with"
    )
