"""Telegraf, the project's custom build, with ingest/telegraf/local/telegraf.conf."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request

from ingest import kafka_access, settings
from sanlensctl import config, procs

NAME = "telegraf"
PROCESSES = [NAME]
PORT = config.TELEGRAF_LISTENER_PORT
CONFIG = config.ROOT / "ingest" / "telegraf" / "local" / "telegraf.conf"
BINARY = config.BIN / "telegraf"
POLLERS = config.RUN / "telegraf.d"  # generated poller configs of the simulated fleet (./sanlens demo)


def env() -> dict[str, str]:
    return dict(
        config.tool_env(),
        SANLENS_TELEGRAF_LISTENER_PORT=str(config.TELEGRAF_LISTENER_PORT),
        SANLENS_TELEGRAF_HEALTH_PORT=str(config.TELEGRAF_HEALTH_PORT),
        # the agents' Kafka password, which the config reads from the environment
        # (docs/security.md#who-may-do-what-on-kafka)
        SANLENS_KAFKA_AGENTS_PASSWORD=settings.kafka_password(kafka_access.AGENTS),
    )


def start() -> int:
    procs.require_free(config.TELEGRAF_LISTENER_PORT, "the Telegraf listener", "SANLENS_TELEGRAF_LISTENER_PORT")
    procs.require_free(config.TELEGRAF_HEALTH_PORT, "Telegraf's health output", "SANLENS_TELEGRAF_HEALTH_PORT")
    POLLERS.mkdir(parents=True, exist_ok=True)
    return procs.start(NAME, [str(BINARY), "--config", str(CONFIG), "--config-directory", str(POLLERS)], env())


def reload() -> None:
    """Telegraf reads its config folder (the simulated fleet's pollers) anew. On SIGHUP it flushes what it holds
    and starts again with the new config in the same process, within a second (a stop and start took 5 s, the
    health output's settling included); `start()` if it is not running. Done once its health output, the
    last output it connects, listens again."""
    pid, log = procs.pid_of(NAME), procs.log_file(NAME)
    if pid is None:
        start()
        procs.wait_for(lambda: probe()["healthy"], 60, NAME, [NAME])
        return
    offset = log.stat().st_size
    os.kill(pid, signal.SIGHUP)
    procs.wait_for(lambda: RELOADED in _log_since(log, offset), 60, f"{NAME} reloading its config", [NAME])


RELOADED = "[outputs.health] Listening on"


def _log_since(log, offset: int) -> str:
    with open(log, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def version() -> str:
    return subprocess.run([str(BINARY), "--version"], capture_output=True, text=True).stdout.split()[-1]


# outputs.health answers 200 before its first metrics arrive: trust it only after two internal gathers.
SETTLE_SECONDS = 5


def probe() -> dict:
    """Telegraf's outputs.health answers 200 once its Kafka output has flushed without errors."""
    pid = procs.pid_of(NAME)
    if pid and procs.uptime(pid) < SETTLE_SECONDS:
        return {"healthy": False, "port": PORT, "version": version(), "detail": "starting"}
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{config.TELEGRAF_HEALTH_PORT}/", timeout=2) as resp:
            healthy = resp.status == 200
    except urllib.error.HTTPError as err:
        healthy = False if err.code == 503 else None
    return {
        "healthy": bool(healthy),
        "port": PORT,
        "version": version(),
        "detail": "flushing to Kafka" if healthy else "alive, not flushing to Kafka yet (or output errors)",
    }
