"""Who sees what in Grafana (grafana/organisations.py, docs/security.md): an organisation per customer whose data source
reads as that customer's role, the same dashboards in each, no data source as the admin or the analyst, passwords only
from the environment; the compose Grafana without anonymous access, given each data source's password; start.sh makes
the organisations Grafana provisions into (tests/fake_grafana.py stands in for Grafana's HTTP API)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest
import yaml

from clickhouse import roles
from grafana import organisations
from sanlensctl.config import free_port
from tests.support import ROOT

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def provisioned(path) -> dict:
    return yaml.safe_load(path.read_text())


def test_the_provisioning_files_are_in_step_with_the_customers():
    stale = [path.name for path, text in organisations.files() if not path.exists() or path.read_text() != text]
    assert not stale, f"out of date: {stale}; run grafana/generate.py"


def test_each_customer_has_an_organisation_whose_data_source_reads_as_its_role():
    datasources = provisioned(organisations.DATASOURCES)["datasources"]
    by_org = {d["orgId"]: d for d in datasources}
    assert len(by_org) == len(datasources), "one data source per organisation"
    customers = roles.file_customers()
    assert customers, "clickhouse/access/customers.yaml names the customers"
    rows = [line.split("\t") for line in organisations.ORGANISATIONS.read_text().splitlines() if line[:1] != "#"]
    assert [name for _, name in rows] == customers, "organisation N + 1 is the file's Nth customer"
    for org_id, customer in rows:
        source = by_org[int(org_id)]
        role = roles.customer_role(customer)
        assert source["jsonData"]["username"] == role, (customer, source)
        assert source["secureJsonData"] == {"password": "${" + roles.password_variable(role) + "}"}
        assert source["uid"] == "sanlens-clickhouse" and source["isDefault"], "the dashboards' default data source"
    main = by_org[organisations.MAIN_ORG]
    assert main["jsonData"]["username"] == "dashboards"
    assert set(by_org) == {organisations.MAIN_ORG, *(int(org_id) for org_id, _ in rows)}


def test_no_data_source_reads_as_a_user_that_sees_more_than_the_dashboards():
    every = roles.roles(roles.file_customers())
    for source in provisioned(organisations.DATASOURCES)["datasources"]:
        user = source["jsonData"]["username"]
        assert user not in (roles.admin(), "analyst", "ingest"), source
        assert every[user].readonly, source
        assert re.fullmatch(r"\$\{SANLENS_CLICKHOUSE_\w+_PASSWORD\}", source["secureJsonData"]["password"]), source


def test_every_organisation_gets_the_dashboards_the_customers_get_theirs():
    providers = provisioned(organisations.PROVIDERS)["providers"]
    orgs = {o["orgId"] for o in provisioned(organisations.DATASOURCES)["datasources"]}
    assert sorted(p["orgId"] for p in providers) == sorted(orgs)
    assert len({p["name"] for p in providers}) == len(providers)
    paths = {p["orgId"]: p["options"]["path"] for p in providers}
    assert paths.pop(organisations.MAIN_ORG) == organisations.DASHBOARDS_IN_CONTAINER
    assert set(paths.values()) == {organisations.CUSTOMER_DASHBOARDS_IN_CONTAINER}
    assert all(p["disableDeletion"] and not p["allowUiUpdates"] for p in providers)
    mounts = COMPOSE["grafana"]["volumes"]
    assert f"./grafana/dashboards-customers:{organisations.CUSTOMER_DASHBOARDS_IN_CONTAINER}:ro" in mounts


def test_the_customers_dashboards_are_the_main_ones_less_the_fleet_level():
    main = {p.name: json.loads(p.read_text()) for p in (organisations.HERE / "dashboards").glob("*.json")}
    customers = {p.name: json.loads(p.read_text()) for p in organisations.CUSTOMER_DASHBOARDS.glob("*.json")}
    assert main.keys() == customers.keys()
    assert {n: b["uid"] for n, b in main.items()} == {n: b["uid"] for n, b in customers.items()}
    fleet = "service_time_hist_fleet_1h"  # every customer's I/Os pooled: a customer's role may not read it
    assert fleet in json.dumps(main) and fleet not in json.dumps(customers)


def test_compose_grafana_has_no_anonymous_access_and_each_data_source_s_password():
    grafana, migrate = COMPOSE["grafana"], COMPOSE["migrate"]
    assert grafana["environment"]["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert grafana["environment"]["GF_SECURITY_ADMIN_PASSWORD"].endswith(":?set a password}")
    for source in provisioned(organisations.DATASOURCES)["datasources"]:
        variable = source["secureJsonData"]["password"][2:-1]
        required = "${" + variable + ":?set a password}"
        assert grafana["environment"].get(variable) == required, variable  # Grafana interpolates it
        assert migrate["environment"].get(variable) == required, variable  # migrate makes the user with it
    assert grafana["entrypoint"] == ["/bin/bash", "/etc/sanlens/start.sh"]
    assert "./grafana/start.sh:/etc/sanlens/start.sh:ro" in grafana["volumes"]
    assert "./grafana/organisations.tsv:/etc/sanlens/organisations.tsv:ro" in grafana["volumes"]
    assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in grafana["volumes"]


@pytest.fixture
def fake_grafana(tmp_path):
    """start.sh's environment with a fake Grafana as the image's /run.sh: the setup Grafana (started on
    GF_SERVER_HTTP_PORT) is tests/fake_grafana.py, the real start prints what it was given."""
    orgs = tmp_path / "organisations.json"
    orgs.write_text(json.dumps({1: "Main Org."}))
    run = tmp_path / "run.sh"
    run.write_text(
        "#!/bin/bash\n"
        f'[[ -n "${{GF_SERVER_HTTP_PORT:-}}" ]] && exec {sys.executable} {ROOT / "tests" / "fake_grafana.py"} '
        f'"$GF_SERVER_HTTP_PORT" {orgs}\n'
        'echo "grafana started: $*"\n'
    )
    run.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "TMPDIR": str(tmp_path),
        "GF_SECURITY_ADMIN_PASSWORD": "secret",
        "SANLENS_GRAFANA_ORGANISATIONS": str(organisations.ORGANISATIONS),
        "SANLENS_GRAFANA_RUN": str(run),
    }
    return env, orgs


def start(env: dict) -> subprocess.CompletedProcess:
    port = str(free_port())
    out = subprocess.run(
        ["bash", str(ROOT / "grafana" / "start.sh"), "--flag"],
        env={**env, "SANLENS_GRAFANA_SETUP_PORT": port},
        capture_output=True,
        text=True,
        timeout=120,
    )
    deadline = time.monotonic() + 10
    while listening(int(port)):  # the setup Grafana is stopped, whatever the outcome
        assert time.monotonic() < deadline, "start.sh left its setup Grafana running"
        time.sleep(0.1)
    return out


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_start_makes_each_customer_s_organisation_then_starts_grafana(fake_grafana):
    env, orgs = fake_grafana
    expected = {"1": "Main Org."} | {str(o.org_id): o.name for o in organisations.organisations()[1:]}
    first = start(env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert json.loads(orgs.read_text()) == expected
    assert first.stdout.endswith("grafana started: --flag\n") and "made organisation 2 'acme'" in first.stdout
    again = start(env)  # Grafana's database kept: nothing to make
    assert again.returncode == 0 and "made" not in again.stdout, again.stdout + again.stderr
    assert json.loads(orgs.read_text()) == expected


def test_start_stops_when_an_organisation_has_another_number_or_name(fake_grafana):
    env, orgs = fake_grafana
    orgs.write_text(json.dumps({1: "Main Org.", 2: "initech"}))
    out = start(env)
    assert out.returncode == 1 and "organisation 2 is not 'acme'" in out.stderr, out.stdout + out.stderr
    assert "grafana started" not in out.stdout
