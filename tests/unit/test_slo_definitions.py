"""SLO definitions (slo/slos.yaml): the default set and its burn rates, and bad files refused by
./sanlens up with one line naming the file and the field."""

from __future__ import annotations

import pytest

from slo import definitions
from tests.support import sanlens

GOOD = """
slos:
  - {name: x, direction: read, threshold_ms: 1, objective: 0.99, select: {tier: flash}}
alerts:
  - {severity: page, budget: 0.02, long: 1h, short: 5m}
"""


def test_the_default_set_loads_with_the_sre_workbook_burn_rates():
    d = definitions.load(definitions.DEFAULT_FILE)
    assert d.period_days == 30 and {s.name for s in d.slos} >= {"flash-reads", "hybrid-reads"}
    assert [(a.severity, round(a.burn_rate(d.period_days), 2)) for a in d.alerts] == [
        ("page", 14.4),
        ("page", 6.0),
        ("ticket", 3.0),
        ("ticket", 1.0),
    ]
    assert all(0 < s.budget < 1 and s.threshold_ms > 0 for s in d.slos)


@pytest.mark.parametrize(
    "change, field",
    [
        (("select: {tier: flash}", "select: {colour: red}"), "slos[0].select.colour"),
        (("threshold_ms: 1,", "threshold_ms: 0,"), "slos[0].threshold_ms"),
        (("threshold_ms: 1,", "threshold_ms: fast,"), "slos[0].threshold_ms"),
        (("objective: 0.99", "objective: 1.0"), "slos[0].objective"),
        (("objective: 0.99", "objective: 0"), "slos[0].objective"),
        (("long: 1h", "long: 90m"), "alerts[0].long"),
        (("short: 5m", "short: 1d"), "alerts[0].short"),
        (("direction: read", "direction: sideways"), "slos[0].direction"),
    ],
)
def test_a_bad_file_names_the_file_and_the_field(tmp_path, change, field):
    good, bad = tmp_path / "good.yaml", tmp_path / "slos.yaml"
    good.write_text(GOOD)
    assert len(definitions.load(good).slos) == 1
    bad.write_text(GOOD.replace(*change))
    with pytest.raises(definitions.SloFileError) as err:
        definitions.load(bad)
    assert str(err.value).startswith(f"{bad}: {field}: ") and "\n" not in str(err.value)


def test_up_refuses_a_bad_file_before_starting_anything(tmp_path):
    bad = tmp_path / "slos.yaml"
    bad.write_text(GOOD.replace("long: 1h", "long: 90m"))
    out = sanlens("up", env={"SANLENS_SLOS": str(bad)}, timeout=60)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        f"sanlens: error: {bad}: alerts[0].long: '90m' is not one of 5m, 30m, 1h, 2h, 6h, 1d, 3d"
    )
