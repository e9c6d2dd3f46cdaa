"""One definition per name, and tests that every other place agrees with it: the Kafka topics of
ingest/topics.yaml, and the 3PAR service-time bucket bounds (Python: ingest/buckets.py; ClickHouse SQL:
migration 0006; Flink SQL: generated from the Python; the seed figure's own bounds)."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from chdb import session

from flink_jobs.histograms.tables import bucket_of as flink_bucket_of
from ingest import buckets, topics
from queries import cohorts
from sanlensctl import migrate
from tests.support import ROOT

TOPIC_NAME = re.compile(r"\b(?:telemetry|inventory)\.[a-z_]+\b")
# Where topic names are written out: configs and docs by necessity, code in docstrings and comments.
NAMING_FILES = [
    "ingest/telegraf/**/*.conf",
    "docs/*.md",
    "README.md",
    "docker-compose.yml",
    "flink-jobs/**/*.py",
    "ingest/**/*.py",
    "sanlensctl/**/*.py",
    "ingest/**/README.md",
    "flink-jobs/**/README.md",
]


def test_every_topic_named_in_configs_docs_and_code_is_in_the_contract():
    unknown = defaultdict(set)
    for pattern in NAMING_FILES:
        for path in ROOT.glob(pattern):
            for name in TOPIC_NAME.findall(path.read_text()):
                if name not in topics.CONTRACT:
                    unknown[name].add(str(path.relative_to(ROOT)))
    assert not unknown, "topics missing from ingest/topics.yaml: " + "; ".join(
        f"{name} in {', '.join(sorted(files))}" for name, files in sorted(unknown.items())
    )


def test_every_topic_of_the_contract_is_documented_and_has_an_id():
    doc = (ROOT / "docs" / "contract.md").read_text()
    for name, spec in topics.CONTRACT.items():
        assert f"| `{name}` |" in doc, f"{name}: no row in docs/contract.md"
        assert spec.get("id"), f"{name}: no id in ingest/topics.yaml"


# The seed's Figure 2 (001_a6b901dd083219df.txt) labels its buckets in ms, doubling, with ".12 ms" the
# Express Writes bucket; System Reporter's rhist/whist n is bounded by 2^(n-7) ms.
SEED_UPPER_MS = {
    0: 0.0078,
    1: 0.0156,
    2: 0.03125,
    3: 0.0625,
    4: 0.125,
    5: 0.25,
    6: 0.5,
    7: 1,
    8: 2,
    9: 4,
    10: 8,
    11: 16,
    12: 32,
    13: 64,
    14: 128,
    15: 256,
}


@pytest.fixture(scope="module")
def clickhouse_sql(tmp_path_factory):
    """The engine of the stack, in process (chdb), with migration 0006's bucket functions."""
    ch = session.Session(str(tmp_path_factory.mktemp("chdb")))
    migration = ROOT / "clickhouse" / "migrations" / "0006_service_time_functions.sql"
    for statement in migrate.statements(migration.read_text()):
        ch.query(statement)
    return lambda sql: ch.query(sql, "TabSeparated").bytes().decode().split()


def test_bucket_bounds_agree_in_python_clickhouse_and_the_seed_figure(clickhouse_sql):
    upper = clickhouse_sql(f"SELECT serviceTimeBucketUpperMs(number) FROM numbers({buckets.COUNT})")
    lower = clickhouse_sql(f"SELECT serviceTimeBucketLowerMs(number) FROM numbers({buckets.COUNT})")
    assert [float(v) for v in upper] == buckets.UPPER_MS
    assert [float(v) for v in lower] == [buckets.lower_ms(n) for n in range(buckets.COUNT)]
    for n, seed in SEED_UPPER_MS.items():
        assert buckets.upper_ms(n) == pytest.approx(seed, rel=0.01), n


def test_a_bucket_is_labelled_by_its_range_not_by_its_upper_bound(clickhouse_sql):
    labels = {0: "0–0.0078125 ms", 4: "0.0625–0.125 ms", 7: "0.5–1 ms", 30: "4194304–8388608 ms", 31: "> 8388608 ms"}
    for n, label in labels.items():
        assert clickhouse_sql(f"SELECT {cohorts.bucket_label(str(n))} = '{label}'") == ["1"], n


def test_flink_places_service_times_in_the_same_buckets_as_python(clickhouse_sql):
    """The Flink SQL expression is generated from ingest/buckets.py; its CASE/CEIL/LOG2 read the same in
    ClickHouse, so it is evaluated there on every bound, just above it, and between bounds."""
    values = sorted({0.001, 1e9} | {b * f for b in buckets.UPPER_MS[:-1] for f in (0.75, 1.0, 1.0000001)})
    placed = clickhouse_sql("SELECT " + flink_bucket_of("x") + f" FROM (SELECT arrayJoin({values!r}) AS x) ORDER BY x")
    assert [int(b) for b in placed] == [buckets.bucket_of(v) for v in values]
