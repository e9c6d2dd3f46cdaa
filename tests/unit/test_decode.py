"""The normalize job's decoding step, isolated (pure logic): catalog, canonical units, refusals. The
decoder is the job's Java function (flink-jobs/normalize/java), called here in a JVM through py4j
with the catalog the job hands it."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from py4j.java_gateway import get_field

from flink_jobs.normalize import catalog
from flink_jobs.normalize.catalog import DEAD, DECODED, ENTITY_KEYS
from tests.support import java_functions

NOW = 1_795_000_000_000


@pytest.fixture(scope="module")
def decoder():
    java = java_functions().normalize
    return java.Decoder(java.Catalog(json.dumps(catalog.load())))


@pytest.fixture
def decoded(decoder):
    """The decoder's verdict on a record (a dict, or text as it came), with its samples as Python objects. The job
    hands the decoder a record's bytes, read in one flat pass when Telegraf wrote them, else as text with every
    check: both readings must give the same verdict."""

    def verdict(d):
        samples = [
            SimpleNamespace(**{name: get_field(s, name) for name in ("metric", "kind", "unit", "bucket", "num", "den")})
            for s in get_field(d, "samples")
        ]
        return SimpleNamespace(
            **{name: get_field(d, name) for name in ("outcome", "reason", "detail", "series")},
            entity=list(get_field(d, "entity")),
            samples=samples,
            ts_ms=get_field(d, "tsMs"),
            n_samples=get_field(d, "nSamples"),
            n_unknown=get_field(d, "nUnknown"),
            unknown_fields=list(get_field(d, "unknownFields")),
        )

    def decode(record, arrival=NOW):
        text = record if isinstance(record, str) else json.dumps(record)
        as_text = verdict(decoder.decode(text, arrival))
        as_bytes = verdict(decoder.decode(text.encode("utf-8", "surrogatepass"), arrival))
        assert as_bytes == as_text, text[:300]
        return as_text

    return decode


def win_disk(**fields):
    return {
        "name": "win_disk",
        "timestamp": NOW,
        "tags": {"host": "h", "instance": "E:", "site": "s"},
        "fields": fields,
    }


def test_perfmon_seconds_become_microseconds_and_entities_come_from_tags(decoded):
    d = decoded(win_disk(**{"Avg._Disk_sec/Read": 0.012, "Disk_Reads_persec": 250}))
    assert d.outcome == DECODED and d.ts_ms == NOW
    assert [(x.metric, x.num, x.unit, x.kind) for x in d.samples] == [
        ("disk.read_latency", 12000.0, "us", "gauge"),
        ("disk.reads", 250.0, "1/s", "gauge"),
    ]
    entity = dict(zip(ENTITY_KEYS, d.entity))
    assert (entity["host"], entity["disk"], entity["site"]) == ("h", "E:", "s")


def test_dmv_stall_is_paired_with_its_count_for_the_ratio(decoded):
    d = decoded(
        {
            "name": "sqlserver_database_io",
            "timestamp": NOW,
            "tags": {"sql_instance": "h:MSSQL", "database_name": "db", "logical_filename": "db_data"},
            "fields": {"reads": 100, "read_latency_ms": 1200},
        }
    )
    ratio = next(x for x in d.samples if x.metric == "file.read_latency")
    assert (ratio.kind, ratio.num, ratio.den, ratio.unit) == ("ratio", 1_200_000.0, 100.0, "us")
    entity = dict(zip(ENTITY_KEYS, d.entity))
    assert (entity["database"], entity["file"]) == ("db", "db_data")


def test_histogram_buckets_keep_their_index(decoded):
    d = decoded(
        {
            "name": "array_vv_histogram",
            "timestamp": NOW,
            "tags": {"array": "a", "volumeName": "v"},
            "fields": {f"whist{n}": n for n in range(32)},
        }
    )
    assert sorted(x.bucket for x in d.samples) == list(range(32))
    assert {x.metric for x in d.samples} == {"volume.write_service_time_hist"}


def test_counters_selected_by_a_tag_and_unknown_fields_are_dropped_not_lost(decoded):
    d = decoded(
        {
            "name": "sqlserver_performance",
            "timestamp": NOW,
            "tags": {"counter": "Batch Requests/sec", "object": "SQLServer:SQL Statistics"},
            "fields": {"value": 10, "extra": 1},
        }
    )
    assert [x.metric for x in d.samples] == ["sql.batch_requests"]
    assert d.unknown_fields == ["sqlserver_performance.extra"]
    other = decoded(
        {"name": "sqlserver_performance", "timestamp": NOW, "tags": {"counter": "Logins/sec"}, "fields": {"value": 10}}
    )
    assert other.samples == [] and other.unknown_fields == ["sqlserver_performance.value"]


def test_a_record_counts_its_samples_and_unknown_fields_and_names_its_series(decoded):
    d = decoded(win_disk(**{"Avg._Disk_sec/Read": 0.012, "Foo": 1}))
    assert (d.outcome, d.reason, d.ts_ms, d.n_samples, d.n_unknown) == (DECODED, "", NOW, 2, 1)
    assert [(s.metric, s.kind, s.unit, s.bucket, s.num, s.den) for s in d.samples] == [
        ("disk.read_latency", "gauge", "us", -1, 12000.0, None)
    ]
    assert d.entity[:3] == ["s", "h", "E:"] and d.series == "win_disk|host=h|instance=E:|site=s"


BAD = {
    "not JSON": "garbage{",
    "not a JSON object": "[1, 2]",
    "empty message": "",
    "missing field": {"name": "win_disk", "timestamp": NOW, "tags": {}},
    "unknown measurement": {"name": "nope", "timestamp": NOW, "tags": {}, "fields": {"a": 1}},
    "bad timestamp": {"name": "win_disk", "timestamp": "yesterday", "tags": {}, "fields": {"Disk_Reads_persec": 1}},
    "timestamp in the future": {**win_disk(Disk_Reads_persec=1), "timestamp": NOW + 3_600_000},
    "timestamp too old": {**win_disk(Disk_Reads_persec=1), "timestamp": NOW - 40 * 86_400_000},
    "non-numeric value": win_disk(Disk_Reads_persec="many"),
    "non-finite value": f'{{"name":"win_disk","timestamp":{NOW},"tags":{{}},'
    '"fields":{"Disk_Reads_persec":Infinity}}',
    "negative value": win_disk(Disk_Reads_persec=-5),
    "beyond physical bounds": win_disk(**{"Avg._Disk_sec/Read": 120.0}),
    "bad tag": {**win_disk(Disk_Reads_persec=1), "tags": {"host": 5}},
    "duplicate key": f'{{"name":"win_disk","timestamp":{NOW},"tags":{{}},"fields":{{"Disk_Reads_persec":1,'
    '"Disk_Reads_persec":-1}}',
}


@pytest.mark.parametrize("reason", BAD)
def test_each_kind_of_bad_record_is_refused_whole_with_its_own_reason(decoded, reason):
    d = decoded(BAD[reason])
    assert (d.outcome, d.reason, d.samples) == (DEAD, reason, [])


@pytest.mark.parametrize("units", [1, 1000, 1_000_000, 1_000_000_000])
def test_timestamps_in_seconds_ms_us_and_ns_are_all_understood(decoded, units):
    """Telegraf's default JSON timestamp is whole seconds; json_timestamp_units can make it ms, us or ns."""
    seconds = NOW // 1000
    d = decoded({**win_disk(Disk_Reads_persec=1), "timestamp": seconds * units})
    assert d.outcome == DECODED and d.ts_ms == seconds * 1000


def test_nan_is_refused_like_infinity(decoded):
    d = decoded(f'{{"name":"win_disk","timestamp":{NOW},"tags":{{}},"fields":{{"Disk_Reads_persec":NaN}}}}')
    assert (d.reason, d.detail) == ("non-finite value", "Disk_Reads_persec = nan")


def test_details_say_which_field_and_by_how_much(decoded):
    assert decoded(BAD["beyond physical bounds"]).detail == "Avg._Disk_sec/Read = 120 > 60"
    assert decoded(win_disk(Disk_Reads_persec=-0.00001234)).detail == "Disk_Reads_persec = -1.234e-05"
    assert decoded(win_disk(Disk_Reads_persec=True)).reason == "non-numeric value"
    assert decoded(json.dumps(win_disk(Disk_Reads_persec=1)) + " trailing").reason == "not JSON"


@pytest.mark.parametrize(
    "value, detail",
    [
        (5, "host is number, not a string"),
        (True, "host is boolean, not a string"),
        (None, "host is null, not a string"),
        (["a"], "host is array, not a string"),
        ({"a": "b"}, "host is object, not a string"),
        ("h" * 4097, "host: longer than 4096 characters"),
    ],
)
def test_a_tag_is_a_string_of_at_most_4096_characters(decoded, value, detail):
    """An entity's value goes into each of the record's samples: a tag that is not a string is refused rather than
    written as its JSON, and one near the broker's size limit rather than failing the samples' sink."""
    d = decoded({**win_disk(Disk_Reads_persec=1), "tags": {"site": "s", "host": value}})
    assert (d.outcome, d.reason, d.detail) == (DEAD, "bad tag", detail)
    assert decoded({**win_disk(Disk_Reads_persec=1), "tags": {"h" * 4097: "x"}}).reason == "bad tag"
    assert decoded({**win_disk(Disk_Reads_persec=1), "tags": {"host": "h" * 4096}}).outcome == DECODED


def test_a_name_twice_in_one_object_is_refused_whichever_object(decoded):
    assert decoded(BAD["duplicate key"]).detail == "Duplicate field 'Disk_Reads_persec'"
    record = json.dumps(win_disk(Disk_Reads_persec=1))
    for twice in (
        record.replace('"tags": {', '"tags": {"host": "a", '),
        record.replace('{"name"', '{"timestamp": 1, "name"', 1),
        record.replace('"fields": {', '"fields": {"x": {"a": 1, "a": 2}, '),
    ):
        assert decoded(twice).reason == "duplicate key", twice


def test_a_cumulative_field_beyond_a_64_bit_counter_is_refused_not_made_infinite(decoded):
    """2.5 us ticks of 1e308 were an infinite sample; no counter reaches 2^64."""
    port = {"name": "brocade_fc_port", "timestamp": NOW, "tags": {}, "fields": {"bb-credit-zero": 1e308}}
    assert (decoded(port).reason, decoded(port).detail) == (
        "beyond physical bounds",
        "bb-credit-zero = 1e+308 > 1.84467e+19",
    )
    assert decoded({**port, "fields": {"bb-credit-zero": 2**64 - 1}}).outcome == DECODED


def test_a_dead_letter_carries_the_first_100000_characters_of_its_payload():
    """Escaped as JSON, a payload near the broker's limit grows up to six times: whole, it was too large for the
    dead-letter sink, which failed the job at every restart."""
    cut = java_functions().normalize.NormalizeRecords.deadLetter
    assert list(cut("x" * 100_000, "why")) == ["x" * 100_000, "why"]
    payload, detail = cut("\x01" * 1_000_000, "")
    assert (len(payload), detail) == (100_000, "payload cut to its first 100,000 of 1,000,000 characters")
    payload, detail = cut("x" * 99_999 + "\U0001f600" * 10, "why")  # not between the halves of a surrogate pair
    assert (len(payload), detail) == (99_999, "why; payload cut to its first 99,999 of 100,019 characters")
    assert list(cut(None, "")) == [None, ""]


def test_bytes_that_are_not_utf8_in_a_tag_are_read_as_replacement_characters(decoder):
    """The job hands the decoder a record's bytes: a tag's bytes that are not UTF-8 come out as U+FFFD, as they
    would from the record's text."""
    record = json.dumps(win_disk(Disk_Reads_persec=1)).encode().replace(b'"host": "h"', b'"host": "h\xff\xfe"')
    d = decoder.decode(record, NOW)
    assert (get_field(d, "outcome"), list(get_field(d, "entity"))[:2]) == (DECODED, ["s", "h\ufffd\ufffd"])


@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xc3\x28", b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xed\xa0\x80\xed\xb0\x80", b"\xf4\x90\x80\x80"],
)
@pytest.mark.parametrize("where", ["name", "tag"])
def test_a_record_with_bytes_that_are_not_utf8_is_decoded_as_its_text_is(decoder, bad, where):
    """Jackson reads an encoded surrogate or an overlong form as a character, which Java's decoder (and so the
    record's text, and the dead letter) reads as U+FFFD: the job decodes such a record from its text. A name
    with a lone surrogate made a dead letter the loader could not read."""
    from pyflink.java_gateway import get_gateway

    record = json.dumps(win_disk(Disk_Reads_persec=1)).encode()
    record = record.replace(b'"win_disk"', b'"win_disk@"') if where == "name" else record.replace(b'"h"', b'"h@"')
    record = record.replace(b"@", bad)
    text = get_gateway().jvm.java.lang.String(record, "UTF-8")
    as_bytes, as_text = decoder.decode(record, NOW), decoder.decode(text, NOW)
    fields = ("outcome", "reason", "detail", "series")
    assert [get_field(as_bytes, f) for f in fields] == [get_field(as_text, f) for f in fields]
    assert list(get_field(as_bytes, "entity")) == list(get_field(as_text, "entity"))
    assert get_field(as_bytes, "reason") == ("unknown measurement" if where == "name" else "")
