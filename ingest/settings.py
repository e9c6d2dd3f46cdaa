"""The stack's settings, each read once from the environment with its one default: where the stack's folders are,
which ports its services use, and how to reach Kafka, ClickHouse and Alertmanager. Every process reads them here
(the Flink jobs, the loader, the simulator, the notifier and the inbox, the ClickHouse client) and the command line
(sanlensctl/config.py) builds on them. Standard library only: nothing a data-path process does not already have.

    SANLENS_STATE   the installed tools and the run folder (.sanlens beside this checkout)
    SANLENS_RUN     the running stack's pid files, data folders, logs (SANLENS_STATE/run)
    SANLENS_LIB     jars: the connectors and the jobs' Java functions (SANLENS_STATE/lib)
    SANLENS_<NAME>_PORT for each name of PORTS; SANLENS_KAFKA, SANLENS_CLICKHOUSE_URL (with _USER, _PASSWORD: else the
    admin user `sanlens` and its password from the local stack's passwords file, SANLENS_CLICKHOUSE_PASSWORDS),
    SANLENS_ALERTMANAGER_URL, SANLENS_ALERT_WEBHOOK_URL, SANLENS_INBOX_HOST
    SANLENS_KAFKA_PASSWORDS  the local stack's Kafka (SASL/SCRAM) passwords, one per principal (SANLENS_STATE/
    kafka-passwords.json); SANLENS_KAFKA_<PRINCIPAL>_PASSWORD overrides one (docker-compose.yml sets them)
    SANLENS_CHECKPOINT_INTERVAL  how often each analytics job checkpoints ("10 s"; normalize every 2 s)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = Path(os.environ.get("SANLENS_STATE", ROOT / ".sanlens"))
RUN = Path(os.environ.get("SANLENS_RUN", STATE / "run"))
LIB = Path(os.environ.get("SANLENS_LIB", STATE / "lib"))

# Each service's port on the local stack (SANLENS_<NAME>_PORT overrides one).
PORTS = {
    "KAFKA": 9092,
    "KAFKA_CONTROLLER": 9193,
    "CLICKHOUSE": 8123,
    "FLINK_REST": 8081,  # the first Flink job's REST API; job i serves on FLINK_REST + i
    "TELEGRAF_HEALTH": 8086,
    "TELEGRAF_LISTENER": 8094,
    "SIMULATOR": 8095,
    "ALERTMANAGER": 9093,
    "ALERT_WEBHOOK": 9097,  # the inbox: the receiver of Alertmanager's notifications
}


def port(name: str) -> int:
    return int(os.environ.get(f"SANLENS_{name}_PORT", PORTS[name]))


KAFKA_BOOTSTRAP = os.environ.get("SANLENS_KAFKA", f"127.0.0.1:{port('KAFKA')}")
# Kafka's clients authenticate with SASL/SCRAM-SHA-512, one principal per kind of client; what each may do is
# ingest/kafka_access.py (docs/security.md#who-may-do-what-on-kafka). The local stack generates the passwords on
# first use.
KAFKA_PASSWORDS = Path(os.environ.get("SANLENS_KAFKA_PASSWORDS", STATE / "kafka-passwords.json"))
KAFKA_MECHANISM = "SCRAM-SHA-512"
KAFKA_ADMIN = "admin"  # the broker's super user: ./sanlens (topics, ACLs, credentials), the tests, the benchmarks


def kafka_password(principal: str) -> str:
    """SANLENS_KAFKA_<PRINCIPAL>_PASSWORD, else the principal's in the passwords file ('' if none)."""
    env = os.environ.get(f"SANLENS_KAFKA_{principal.upper().replace('-', '_')}_PASSWORD")
    if env:
        return env
    try:
        return json.loads(KAFKA_PASSWORDS.read_text()).get(principal, "")
    except (OSError, ValueError):
        return ""


def kafka_client(principal: str = KAFKA_ADMIN, bootstrap: str | None = None) -> dict[str, str]:
    """A librdkafka (confluent_kafka) client's settings to reach the stack's Kafka as `principal`: every Kafka
    client of the project starts from these (add group.id, linger.ms, ... to a copy)."""
    return {
        "bootstrap.servers": bootstrap or KAFKA_BOOTSTRAP,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": KAFKA_MECHANISM,
        "sasl.username": principal,
        "sasl.password": kafka_password(principal),
    }


def flink_kafka_properties(principal: str, bootstrap: str | None = None) -> dict[str, str]:
    """The same for Flink's Kafka connector (its `properties.*` options; the connector's Kafka classes are shaded)."""
    password = kafka_password(principal).replace("\\", "\\\\").replace('"', '\\"')
    return {
        "properties.bootstrap.servers": bootstrap or KAFKA_BOOTSTRAP,
        "properties.security.protocol": "SASL_PLAINTEXT",
        "properties.sasl.mechanism": KAFKA_MECHANISM,
        "properties.sasl.jaas.config": "org.apache.flink.kafka.shaded.org.apache.kafka.common.security.scram."
        f'ScramLoginModule required username="{principal}" password="{password}";',
    }


CLICKHOUSE_URL = os.environ.get("SANLENS_CLICKHOUSE_URL", f"http://127.0.0.1:{port('CLICKHOUSE')}")
# The local stack's ClickHouse passwords, one per user, generated on first use (mode 0600; clickhouse/roles.py).
CLICKHOUSE_PASSWORDS = Path(os.environ.get("SANLENS_CLICKHOUSE_PASSWORDS", STATE / "clickhouse-passwords.json"))
CLICKHOUSE_USER = os.environ.get("SANLENS_CLICKHOUSE_USER", "sanlens")


def clickhouse_password(user: str = CLICKHOUSE_USER) -> str:
    """SANLENS_CLICKHOUSE_PASSWORD for SANLENS_CLICKHOUSE_USER, else the user's in the passwords file ('' if none)."""
    if user == CLICKHOUSE_USER and os.environ.get("SANLENS_CLICKHOUSE_PASSWORD"):
        return os.environ["SANLENS_CLICKHOUSE_PASSWORD"]
    try:
        return json.loads(CLICKHOUSE_PASSWORDS.read_text()).get(user, "")
    except (OSError, ValueError):
        return ""


CLICKHOUSE_PASSWORD = clickhouse_password()  # as the process started; clients ask clickhouse_password() anew
ALERTMANAGER_URL = os.environ.get("SANLENS_ALERTMANAGER_URL", f"http://127.0.0.1:{port('ALERTMANAGER')}")
# where the inbox listens: the loopback in local mode, every interface in a container (docker-compose.yml)
INBOX_HOST = os.environ.get("SANLENS_INBOX_HOST", "127.0.0.1")
ALERT_WEBHOOK_URL = os.environ.get("SANLENS_ALERT_WEBHOOK_URL", f"http://127.0.0.1:{port('ALERT_WEBHOOK')}/alerts")
INBOX_FILE = RUN / "inbox" / "notifications.jsonl"  # every notification the inbox (slo/inbox.py) received
# The analytics jobs' checkpoint interval: their Kafka outputs commit, and become visible downstream, with each one.
CHECKPOINT_INTERVAL = os.environ.get("SANLENS_CHECKPOINT_INTERVAL", "10 s")
