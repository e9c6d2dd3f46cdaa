"""What Grafana's provisioning files say that the dashboards' and the alert rules' tests check against: the
provisioned ClickHouse data source (grafana/provisioning/datasources/clickhouse.yaml), its type and uid."""

from __future__ import annotations

import yaml

from tests.support import ROOT

PROVISIONED = yaml.safe_load((ROOT / "grafana" / "provisioning" / "datasources" / "clickhouse.yaml").read_text())
DATASOURCE = {key: PROVISIONED["datasources"][0][key] for key in ("type", "uid")}
