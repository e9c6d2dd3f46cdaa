"""Writes every dashboard of grafana/ as provisioning JSON into grafana/dashboards/ (the main organisation's) and
grafana/dashboards-customers/ (the customers' organisations': the same, less what reads every customer's data), and the
SLO alert rules.

The alert rules (grafana/slo_alert_rules.py) go to grafana/provisioning/alerting/sanlens-slos.yaml, the Tier 0
warning (grafana/tier_alert_rules.py) to sanlens-tiers.yaml; the organisations, their data sources and dashboards
providers (grafana/organisations.py: one per customer) to provisioning/datasources/, provisioning/dashboards/ and
organisations.tsv.

.sanlens/venv/bin/python grafana/generate.py [--check]   # --check: fail if a file is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grafana_foundation_sdk.cog.encoder import JSONEncoder

from grafana import (
    install_base_service_times,
    load_and_latency,
    organisations,
    slo_alert_rules,
    slos,
    tier_alert_rules,
    tiers,
    where_the_latency_is,
)

HERE = Path(__file__).resolve().parent

DASHBOARDS = {
    "install-base-service-times.json": install_base_service_times,
    "where-the-latency-is.json": where_the_latency_is,
    "slos.json": slos,
    "load-and-latency.json": load_and_latency,
    "tiers.json": tiers,
}


def render(module, for_customers: bool = False) -> str:
    """The dashboard of `module` as provisioning JSON: its variant for customers' organisations if it has one."""
    build = getattr(module, "build_for_customers", module.build) if for_customers else module.build
    board = json.loads(JSONEncoder().encode(build().build()))
    for panel in [q for p in board.get("panels", []) for q in [p, *p.get("panels", [])]]:
        if not panel.get("repeat"):
            # the SDK gives every panel a repeat direction: one that repeats on no variable has none to give
            panel.pop("repeatDirection", None)
    return json.dumps(board, indent=2, sort_keys=True) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if a generated file differs from the code")
    args = ap.parse_args()
    stale = []
    files = [(HERE / "dashboards" / name, render(module)) for name, module in DASHBOARDS.items()]
    files += [(organisations.CUSTOMER_DASHBOARDS / name, render(m, True)) for name, m in DASHBOARDS.items()]
    files.append((slo_alert_rules.PATH, slo_alert_rules.render()))
    files.append((tier_alert_rules.PATH, tier_alert_rules.render()))
    files.extend(organisations.files())
    for path, text in files:
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(HERE.parent)}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run grafana/generate.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
