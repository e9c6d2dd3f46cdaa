"""The normalize job's one function: normalize_records, a Java process table function (java/, compiled
by ./sanlens into .sanlens/lib/jobs) that decodes each raw record against the catalog, pairs each sample
with its series' previous one, and emits samples, dead letters and the record's accounting."""

from __future__ import annotations

from pathlib import Path

from flink_jobs.normalize import catalog


def register(env, state: Path) -> None:
    """normalize_records in `env`, with the catalog written as JSON into the job's state folder."""
    path = catalog.write_json(state / "catalog.json")
    env.get_config().set("pipeline.global-job-parameters", f"{catalog.CATALOG_PARAMETER}:{path}")
    env.create_java_temporary_function("normalize_records", catalog.FUNCTION_CLASS)
