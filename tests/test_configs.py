"""Configs that ship with the project: Telegraf's pass `telegraf config check`, docker-compose points at
files that exist and runs the same job, migrations, topics and dbt project as local mode."""
from __future__ import annotations

import re
import subprocess

import yaml

from conftest import ROOT
from sanlensctl import config
from sanlensctl.components import telegraf


def test_local_telegraf_config_passes_telegraf_config_check():
    out = subprocess.run([str(telegraf.BINARY), "config", "check", "--config", str(telegraf.CONFIG)],
                         capture_output=True, text=True, env=telegraf.env(), timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_docker_compose_uses_the_projects_own_files():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"kafka", "clickhouse", "jobmanager", "taskmanager", "grafana", "telegraf", "loader", "dbt"} <= set(services)
    for service in services.values():
        for volume in service.get("volumes", []):
            host_path = volume.split(":")[0]
            if host_path.startswith("./"):
                assert (ROOT / host_path).exists(), host_path
    job = services["submit-normalize"]["command"]
    assert "/opt/sanlens/flink-jobs/normalize/job.py" in job and (ROOT / "flink-jobs/normalize/job.py").exists()
    assert services["migrate"]["command"][-1] == "migrate"
    assert "topics.ensure" in " ".join(services["topics"]["command"])
    assert services["dbt"]["environment"]["DBT_TARGET"] == "compose"
    profiles = yaml.safe_load((ROOT / "dbt" / "profiles.yml").read_text())["sanlens"]["outputs"]
    assert profiles["compose"]["schema"] == profiles["local"]["schema"] == "sanlens_marts"
    image = re.search(r"clickhouse/clickhouse-server:(\d+)", (ROOT / "docker-compose.yml").read_text())
    assert image and image.group(1) == "26"


def test_grafana_provisioning_points_at_the_clickhouse_plugin():
    ds = yaml.safe_load((ROOT / "grafana/provisioning/datasources/clickhouse.yaml").read_text())["datasources"][0]
    assert ds["type"] == "grafana-clickhouse-datasource" and ds["uid"] == "sanlens-clickhouse"
