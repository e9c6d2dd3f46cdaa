"""Configs that ship with the project: Telegraf's pass `telegraf config check`, docker-compose points at
files that exist and runs the same job, migrations, topics and dbt project as local mode."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import jsonschema
import yaml

from sanlensctl.components import telegraf
from tests.support import ROOT

# The Compose Specification's JSON schema, schema/compose-spec.json in compose-go (the library docker compose
# reads its files with), through Go's module cache
COMPOSE_GO = "github.com/compose-spec/compose-go/v2@v2.16.2"
SITE_ENV = {
    "SANLENS_SITE": "site",
    "SANLENS_KAFKA": "kafka:9092",
    "SANLENS_API_GATEWAY": "gateway:8443",
    "SANLENS_SQL_DSN": "Server=localhost;Port=1433;app name=telegraf;log=1;",
}


def config_check(path, buffer_dir) -> subprocess.CompletedProcess:
    """`telegraf config check`, which creates the disk buffer's folder (`buffer_dir`)."""
    return subprocess.run(
        [str(telegraf.BINARY), "config", "check", "--config", str(path)],
        capture_output=True,
        text=True,
        env={**telegraf.env(), **SITE_ENV, "SANLENS_BUFFER_DIR": str(buffer_dir)},
        timeout=60,
    )


def test_local_and_poller_telegraf_configs_pass_telegraf_config_check(tmp_path):
    for path in (telegraf.CONFIG, ROOT / "ingest" / "telegraf" / "poller" / "telegraf.conf"):
        out = config_check(path, tmp_path)
        assert out.returncode == 0, (path, out.stdout + out.stderr)


def test_host_config_passes_config_check_except_its_windows_only_plugin(tmp_path):
    """win_perf_counters exists only in Windows builds of Telegraf; everything else is checked here."""
    text = (ROOT / "ingest" / "telegraf" / "host" / "telegraf.conf").read_text()
    linux = re.sub(r"\[\[inputs\.win_perf_counters\]\].*?(?=\n# sys\.dm_io)", "", text, flags=re.S)
    assert "win_perf_counters" not in linux and "[[inputs.sqlserver]]" in linux
    (tmp_path / "host.conf").write_text(linux)
    out = config_check(tmp_path / "host.conf", tmp_path / "buffer")
    assert out.returncode == 0, out.stdout + out.stderr
    as_shipped = ROOT / "ingest" / "telegraf" / "host" / "telegraf.conf"
    assert config_check(as_shipped, tmp_path).returncode != 0  # as the README says


def test_sample_poller_config_is_what_pollers_py_renders():
    from ingest.telegraf import pollers

    sample = (ROOT / "ingest" / "telegraf" / "poller" / "telegraf.conf").read_text()
    assert pollers.render(**pollers.EXAMPLE) in sample


def test_every_measurement_the_configs_emit_is_in_the_normalize_catalog():
    catalog = yaml.safe_load((ROOT / "flink-jobs" / "normalize" / "catalog.yaml").read_text())["measurements"]
    host = (ROOT / "ingest" / "telegraf" / "host" / "telegraf.conf").read_text()
    poller = (ROOT / "ingest" / "telegraf" / "poller" / "telegraf.conf").read_text()
    emitted = set(re.findall(r'Measurement = "(\w+)"', host)) | set(re.findall(r'measurement_name = "(\w+)"', poller))
    emitted |= {"sqlserver_database_io", "sqlserver_performance", "sqlserver_waitstats", "internal_agent"}
    assert emitted <= set(catalog), emitted - set(catalog)


def test_docker_compose_uses_the_projects_own_files():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"kafka", "clickhouse", "jobmanager", "taskmanager", "grafana", "telegraf", "loader", "dbt"} <= set(services)
    assert "alertmanager" in services  # its config and version: tests/stack/test_alertmanager.py
    for name in ("notifier", "inbox"):  # the local stack's processes, the same scripts
        assert (ROOT / services[name]["command"][-1]).exists(), name
    assert services["alertmanager"]["environment"]["SANLENS_ALERT_WEBHOOK_URL"].endswith("http://inbox:9097/alerts}")
    for service in services.values():
        for volume in service.get("volumes", []):
            host_path = volume.split(":")[0]
            if host_path.startswith("./"):
                assert (ROOT / host_path).exists(), host_path
    from sanlensctl.components import flink

    for name in flink.JOBS:  # every job local mode starts is submitted in the compose shape too
        job = services[f"submit-{name}"]["command"]
        assert f"/opt/sanlens/flink-jobs/{name}/job.py" in job and (ROOT / f"flink-jobs/{name}/job.py").exists()
    from sanlensctl import cli

    for name in ("migrate", "topics"):  # the command line's own commands, as ./sanlens runs them
        assert services[name]["command"][:3] == ["python", "-m", "sanlensctl"], name
        assert services[name]["command"][-1] == name and name in cli.COMMANDS, name
    # the Flink image installs the project as the local stack does: every package's folder must be in it
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {project["package-dir"].get(p, p) for p in project["packages"] if "." not in p}
    flink_image = compose["x-flink"]["build"]["dockerfile_inline"]
    assert not [f for f in folders if f"COPY {f} /opt/sanlens/{f}" not in flink_image]
    assert services["dbt"]["environment"]["DBT_TARGET"] == "compose"
    profiles = yaml.safe_load((ROOT / "dbt" / "profiles.yml").read_text())["sanlens"]["outputs"]
    assert profiles["compose"]["schema"] == profiles["local"]["schema"] == "sanlens_marts"
    image = re.search(r"clickhouse/clickhouse-server:(\d+)", (ROOT / "docker-compose.yml").read_text())
    assert image and image.group(1) == "26"


def compose_schema() -> dict:
    """COMPOSE_GO's schema: `go mod download` fetches the module once (checked against Go's checksum database)."""
    out = subprocess.run(["go", "mod", "download", "-json", COMPOSE_GO], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads((Path(json.loads(out.stdout)["Dir"]) / "schema" / "compose-spec.json").read_text())


def test_docker_compose_follows_the_compose_specification():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    jsonschema.validate(compose, compose_schema())


def test_docker_compose_runs_the_jobs_on_a_cluster_with_their_state_in_rocksdb_on_volumes():
    """The compose shape of local mode's state settings (flink-jobs/common/runtime.py): RocksDB with incremental
    checkpoints, its files and the checkpoints on named volumes, managed memory sized, two TaskManagers with a slot
    for each subtask of every job at parallelism 2 (tests/stack/test_flink_cluster.py runs a job on such a cluster)."""
    from sanlensctl.components import flink

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    tm, jm = services["taskmanager"], services["jobmanager"]
    props = yaml.safe_load(tm["environment"]["FLINK_PROPERTIES"])
    assert props["state.backend.type"] == "rocksdb" and props["execution.checkpointing.incremental"] is True
    assert props["parallelism.default"] == 2 and props["taskmanager.memory.managed.size"]
    assert tm["deploy"]["replicas"] * props["taskmanager.numberOfTaskSlots"] >= 2 * len(flink.JOBS)

    def named_volume(service: dict, path: str) -> str:
        """The named volume `service` mounts at `path` or a folder above it."""
        mounts = [v.split(":")[:2] for v in service["volumes"]]
        [name] = [n for n, at in mounts if path == at or path.startswith(at + "/")]
        assert name in compose["volumes"], name
        return name

    named_volume(tm, props["state.backend.rocksdb.localdir"])
    checkpoints = tm["environment"]["SANLENS_RUN"]  # the jobs' checkpoints, runtime.state_dir
    assert props["execution.checkpointing.dir"].startswith(f"file://{checkpoints}")
    submitters = [services[f"submit-{name}"] for name in flink.JOBS]
    assert len({named_volume(s, checkpoints) for s in [jm, tm, *submitters]}) == 1  # one volume, seen by all
    for submit in submitters:
        assert submit["command"][submit["command"].index("--parallelism") + 1] == "2"


def test_grafana_provisioning_points_at_the_clickhouse_plugin():
    ds = yaml.safe_load((ROOT / "grafana/provisioning/datasources/clickhouse.yaml").read_text())["datasources"][0]
    assert ds["type"] == "grafana-clickhouse-datasource" and ds["uid"] == "sanlens-clickhouse"
