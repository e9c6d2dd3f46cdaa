"""Record types of the normalise job: the raw Telegraf JSON it reads and the samples it writes."""

ENTITY_KEYS = ["site", "host", "disk", "sql_instance", "database", "file", "array", "volume", "host_port",
               "switch", "port"]
# Telegraf tag names that carry an entity key under another name (sqlserver, win_perf_counters).
TAG_ALIASES = {"database": ["database_name"], "file": ["logical_filename"], "disk": ["instance"]}


def raw_metrics(kafka_options: str) -> str:
    """`telemetry.metrics`: Telegraf's JSON serializer, json_timestamp_units = 1ms (docs/contract.md)."""
    return f"""
    CREATE TABLE raw_metrics (
        name STRING,
        tags MAP<STRING, STRING>,
        fields MAP<STRING, STRING>,
        `timestamp` BIGINT,
        ts AS TO_TIMESTAMP_LTZ(`timestamp`, 3),
        WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
    ) WITH ({kafka_options}, 'format' = 'json', 'json.ignore-parse-errors' = 'true')"""


def samples(bootstrap: str) -> str:
    """`telemetry.samples`: one message per field, columns named as in sanlens.metrics."""
    entity_columns = ",\n        ".join(f"`{key}` STRING" for key in ENTITY_KEYS)
    return f"""
    CREATE TABLE samples (
        ts TIMESTAMP_LTZ(3),
        metric STRING,
        `value` DOUBLE,
        unit STRING,
        {entity_columns},
        tags MAP<STRING, STRING>
    ) WITH ('connector' = 'kafka', 'topic' = 'telemetry.samples', 'properties.bootstrap.servers' = '{bootstrap}',
            'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601',
            'sink.delivery-guarantee' = 'at-least-once')"""


def entity_expressions() -> str:
    exprs = []
    for key in ENTITY_KEYS:
        names = [key] + TAG_ALIASES.get(key, [])
        exprs.append(f"COALESCE({', '.join(f'tags[{chr(39)}{n}{chr(39)}]' for n in names)}, '') AS `{key}`")
    return ",\n        ".join(exprs)


FLATTEN = f"""
    INSERT INTO samples
    SELECT ts, name || '.' || f.field_name AS metric, TRY_CAST(f.field_value AS DOUBLE) AS `value`, '' AS unit,
        {entity_expressions()},
        tags
    FROM raw_metrics CROSS JOIN UNNEST(fields) AS f(field_name, field_value)
    WHERE TRY_CAST(f.field_value AS DOUBLE) IS NOT NULL"""
