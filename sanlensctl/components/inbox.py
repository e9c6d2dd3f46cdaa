"""The inbox (slo/inbox.py), one process: the receiver Alertmanager's webhook notifies in the local stack, keeping
every page and ticket it gets (`./sanlens pages`)."""

from __future__ import annotations

import json
import sys
import urllib.request

from sanlensctl import config, procs

NAME = "inbox"
PROCESSES = [NAME]
PORT = config.ALERT_WEBHOOK_PORT
SCRIPT = config.ROOT / "slo" / "inbox.py"
URL = f"http://127.0.0.1:{PORT}"


def start() -> int:
    procs.require_free(PORT, "the inbox", "SANLENS_ALERT_WEBHOOK_PORT")
    return procs.start(NAME, [sys.executable, str(SCRIPT)], config.tool_env())


def notifications() -> list[dict]:
    """Every notification it kept, oldest first: {"received_at": ISO time, "notification": Alertmanager's JSON}."""
    with urllib.request.urlopen(f"{URL}/notifications", timeout=5) as resp:
        return json.load(resp)


def probe() -> dict:
    kept = notifications()
    alerts = sum(len(n["notification"].get("alerts", [])) for n in kept)
    return {
        "healthy": True,
        "port": PORT,
        "version": "-",
        "detail": f"{len(kept)} notification(s) of {alerts} alert(s) kept in {config.INBOX_FILE} (./sanlens pages)",
    }
