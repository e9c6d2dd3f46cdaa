"""Every dbt model is documented: a `.yml` beside it that names it, and a row in dbt/README.md's table of models."""

from __future__ import annotations

import re

import yaml

from tests.support import ROOT

MODELS = ROOT / "dbt" / "models"


def model_names() -> list[str]:
    return sorted(path.stem for path in MODELS.rglob("*.sql"))


def test_every_model_is_listed_in_the_dbt_readme():
    listed = set(re.findall(r"^\| \w+ \| `(\w+)`", (ROOT / "dbt" / "README.md").read_text(), re.MULTILINE))
    missing = [name for name in model_names() if name not in listed]
    assert not missing, f"models in dbt/models that dbt/README.md's table does not list: {', '.join(missing)}"


def test_every_model_has_a_yml_beside_it_that_names_it():
    undocumented = []
    for sql in sorted(MODELS.rglob("*.sql")):
        yml = sql.with_suffix(".yml")
        models = yaml.safe_load(yml.read_text()).get("models", []) if yml.exists() else []
        if sql.stem not in {model["name"] for model in models}:
            undocumented.append(str(sql.relative_to(ROOT)))
    assert not undocumented, f"models without a .yml beside them that names them: {', '.join(undocumented)}"
