"""Each Flink job's Kafka sink writes the columns of the ClickHouse table its topic is loaded into.

The sinks come from the jobs' tables.py (no JVM); the tables from DESCRIBE on a store migrated in-process
with chdb (no stack). Rules for the ClickHouse side only: the loader's own columns and columns with a DEFAULT.
"""

import importlib.util
import json
import re
import sys

import pytest

from clickhouse import schema
from ingest.loader.loader import DEFAULT_ROUTES, LOADED_THROUGH
from tests.support import ROOT

ADDED_BY_LOADER = {"kafka_partition", "kafka_offset"}
# A sink of 'format' = 'raw' carries bytes a Java function writes (normalize's SampleJson): no columns to compare.
RAW_VALUE = "'format' = 'raw'"
SINKS = {
    "normalize": ["sinks"],
    "histograms": ["sinks"],
    "burn_rates": ["sinks"],
    "breakdown": ["sink", "incidents_sink"],
    "tiering": ["sink"],
}


def tables_module(job: str):
    for path in (ROOT / "flink-jobs", ROOT / "flink-jobs" / job):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    spec = importlib.util.spec_from_file_location(f"{job}_tables", ROOT / "flink-jobs" / job / "tables.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def sink_tables():
    """(job, sink table, topic, value columns) of every Kafka sink."""
    placeholder = lambda table, topic: f"'topic' = '{topic}'"  # noqa: E731
    for job, functions in SINKS.items():
        module = tables_module(job)
        for function in functions:
            ddls = getattr(module, function)(placeholder)
            for ddl in [ddls] if isinstance(ddls, str) else ddls:
                if RAW_VALUE in ddl:
                    continue
                name = re.search(r"CREATE TABLE\s+(?:IF NOT EXISTS\s+)?`?(\w+)", ddl).group(1)
                topic = re.search(r"'topic' = '([^']+)'", ddl).group(1)
                body = ddl[ddl.index("(") + 1 : ddl.index(") WITH")]
                columns = [
                    c.strip().split()[0].strip("`") for c in re.split(r",\s*(?![^()<>]*[)>])", body) if c.strip()
                ]
                columns = [c for c in columns if c.upper() not in {"PRIMARY", "WATERMARK"}]
                key = re.search(r"'key.fields' = '(\w+)'", ddl)
                if key and "EXCEPT_KEY" in ddl:
                    columns.remove(key.group(1))
                yield job, name, topic, columns


@pytest.fixture(scope="module")
def store():
    with schema.migrated_store() as migrated:
        yield migrated


def describe(store, table: str) -> dict[str, str]:
    rows = store.query(f"DESCRIBE TABLE {table}", "JSONCompact").data()
    return {r[0]: r[2] for r in json.loads(rows)["data"]}


def test_every_sink_writes_its_clickhouse_tables_columns(store):
    problems, compared = [], 0
    for job, sink, topic, columns in sink_tables():
        compared += 1
        target = DEFAULT_ROUTES[topic]
        table = LOADED_THROUGH.get(target, target)
        described = describe(store, table)
        for column in columns:
            if column not in described:
                problems.append(
                    f"{job}: sink {sink} writes {column}, which ClickHouse table {table} (for {target}) lacks"
                )
        for column, default_kind in described.items():
            if column not in columns and column not in ADDED_BY_LOADER and default_kind != "DEFAULT":
                problems.append(f"{job}: sink {sink} lacks {column} of ClickHouse table {table} (for {target})")
    assert compared >= 9, "the sinks' CREATE TABLE statements no longer parse"
    assert not problems, "\n".join(problems)


def catalog_entity_keys() -> list[str]:
    spec = importlib.util.spec_from_file_location("normalize_catalog", ROOT / "flink-jobs" / "normalize" / "catalog.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.ENTITY_KEYS


# The columns of a sample that are not entity keys, in the store and in dbt's staging model.
METRICS_NOT_KEYS = {
    "ts",
    "metric",
    "value",
    "unit",
    "bucket",
    "tags",
    "arrived_at",
    "loaded_at",
    "kafka_partition",
    "kafka_offset",
}
MESSAGES_NOT_KEYS = {"ts", "arrived_at", "samples", "kafka_partition", "kafka_offset"}


def test_the_entity_keys_are_the_catalogs_in_the_store_and_in_stg_metrics(store):
    keys = catalog_entity_keys()
    assert [c for c in describe(store, "sanlens.metrics") if c not in METRICS_NOT_KEYS] == keys
    assert [c for c in describe(store, "sanlens.metrics_messages") if c not in MESSAGES_NOT_KEYS] == keys
    staging = (ROOT / "dbt" / "models" / "staging" / "stg_metrics.sql").read_text()
    selected = re.search(r"select(.*?)from", staging, re.S).group(1)
    assert [c.strip() for c in selected.split(",") if c.strip() not in METRICS_NOT_KEYS] == keys


def test_the_generated_schema_is_what_the_migrations_make(store):
    assert schema.SCHEMA.read_text() == schema.render(store), (
        "clickhouse/schema.sql is stale: run python clickhouse/schema.py"
    )
