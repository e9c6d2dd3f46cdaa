"""The normalize job's one function: decode_record(payload, arrival_ms), a Java table function
(java/, compiled by ./sanlens into .sanlens/lib/jobs) because SQL cannot walk a JSON object's keys.
It gives one row per record, with the record's counts (samples, unknown fields) for the accounting; the
samples travel as one string (fields joined by U+001F, samples by U+001E) that Flink SQL splits again.
"""

from __future__ import annotations

from pathlib import Path

from flink_jobs.normalize import catalog

COLUMNS = ["outcome", "reason", "detail", "series", "ts_ms", "entity", "samples", "n_samples", "n_unknown"]


def register(env, state: Path) -> None:
    """decode_record in `env`, with the catalog written as JSON into the job's state folder."""
    path = catalog.write_json(state / "catalog.json")
    env.get_config().set("pipeline.global-job-parameters", f"{catalog.CATALOG_PARAMETER}:{path}")
    env.create_java_temporary_function("decode_record", catalog.DECODER_CLASS)
