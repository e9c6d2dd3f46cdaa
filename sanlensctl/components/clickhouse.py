"""ClickHouse: in local mode the embedded engine (chdb) behind the HTTP interface, clickhouse/embedded/."""

from __future__ import annotations

import sys

from clickhouse import roles
from sanlensctl import config, db, procs
from sanlensctl.errors import SanlensError

NAME = "clickhouse"
PROCESSES = [NAME]
PORT = config.CLICKHOUSE_PORT
DATA = config.RUN / "clickhouse"
SERVER = config.ROOT / "clickhouse" / "embedded" / "server.py"


def start() -> int:
    procs.require_free(config.CLICKHOUSE_PORT, "ClickHouse HTTP", "SANLENS_CLICKHOUSE_PORT")
    if DATA.exists() and any(DATA.iterdir()) and not (DATA / "metadata").is_dir():
        raise SanlensError(
            f"the ClickHouse state folder {DATA} is corrupted (no metadata/): "
            "run `./sanlens down --purge` to start afresh"
        )
    DATA.mkdir(parents=True, exist_ok=True)
    roles.ensure_passwords(roles.local_users())  # before tool_env(), which hands the admin's to the processes
    argv = [sys.executable, str(SERVER), "--path", str(DATA), "--port", str(config.CLICKHOUSE_PORT)]
    return procs.start(NAME, argv, config.tool_env())


def probe() -> dict:
    version = db.client(connect_timeout=2, send_receive_timeout=5).command("SELECT version()")
    return {
        "healthy": bool(version),
        "port": PORT,
        "version": str(version),
        "detail": f"embedded (chdb) at {config.CLICKHOUSE_URL}, data {DATA}",
    }
