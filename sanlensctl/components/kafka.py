"""Apache Kafka 4.x, one KRaft node (broker and controller) on loopback, data under .sanlens/run/kafka.

Clients authenticate with SASL/SCRAM-SHA-512 on the client port and the StandardAuthorizer denies what no ACL
allows (ingest/kafka_access.py; docs/security.md#who-may-do-what-on-kafka). The admin's credentials go into the
metadata when the storage is formatted (a folder formatted before: `_add_admin_scram`); every other principal's, and
the ACLs, are made by `topics.ensure` at every `up`.
The controller listener (loopback) takes the admin alone, with SASL PLAIN: the broker reaches its own controller
there."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from clickhouse import roles
from ingest import kafka_access, settings
from sanlensctl import config, procs
from sanlensctl.errors import SanlensError
from sanlensctl.install import require_java

NAME = "kafka"
PROCESSES = [NAME]
PORT = config.KAFKA_PORT
DATA = config.RUN / "kafka"
CLUSTER_ID = "c2FubGVucy1sb2NhbC0x"  # fixed: the local stack has one cluster, formatted once
SASL_MARK = DATA / "sasl-scram"  # written when the storage was formatted with the admin's SCRAM credentials


def passwords() -> dict[str, str]:
    """Every principal's password, generated into .sanlens/kafka-passwords.json (mode 0600) on first use."""
    have = roles.ensure_passwords(list(kafka_access.PRINCIPALS), settings.KAFKA_PASSWORDS)
    return {p: settings.kafka_password(p) or have[p] for p in kafka_access.PRINCIPALS}


def _jaas(user: str, password: str) -> str:
    return f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'


def _properties(admin_plain: bool = False) -> Path:
    """server.properties; `admin_plain`: the client listener also takes the admin with SASL PLAIN (checked against
    this file), to add its SCRAM credentials to a data folder formatted without them (`_add_admin_scram`)."""
    props = DATA / "server.properties"
    admin = settings.KAFKA_ADMIN
    password = passwords()[admin]
    # the file holds the admin's password (the broker's own SASL login): readable by this user only
    fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{config.KAFKA_CONTROLLER_PORT}",
                    f"listeners=SASL_PLAINTEXT://127.0.0.1:{config.KAFKA_PORT},"
                    f"CONTROLLER://127.0.0.1:{config.KAFKA_CONTROLLER_PORT}",
                    f"advertised.listeners=SASL_PLAINTEXT://127.0.0.1:{config.KAFKA_PORT}",
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
                    "inter.broker.listener.name=SASL_PLAINTEXT",
                    f"sasl.enabled.mechanisms={settings.KAFKA_MECHANISM}{',PLAIN' if admin_plain else ''}",
                    *(
                        [
                            "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security."
                            f'plain.PlainLoginModule required username="{admin}" password="{password}" '
                            f'user_{admin}="{password}";'
                        ]
                        if admin_plain
                        else []
                    ),
                    f"sasl.mechanism.inter.broker.protocol={settings.KAFKA_MECHANISM}",
                    f"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config={_jaas(admin, password)}",
                    # The controller's listener: SASL PLAIN with the admin's password, checked against this file (SCRAM
                    # credentials live in the metadata the controller serves); the broker logs in to it as admin.
                    "listener.name.controller.sasl.enabled.mechanisms=PLAIN",
                    "sasl.mechanism.controller.protocol=PLAIN",
                    "listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule"
                    f' required username="{admin}" password="{password}" user_{admin}="{password}";',
                    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    "allow.everyone.if.no.acl.found=false",
                    f"super.users=User:{admin}",
                    f"log.dirs={DATA / 'logs'}",
                    "num.partitions=4",
                    "offsets.topic.replication.factor=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "share.coordinator.state.topic.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "auto.create.topics.enable=false",
                    "log.retention.hours=72",
                    "",
                ]
            )
        )
    return props


def _java_argv(java: str, main: str, *args: str) -> list[str]:
    return [
        java,
        "-Xms256m",
        "-Xmx512m",
        *config.JVM_OPTS.split(),
        f"-Dlog4j2.configurationFile={_log4j()}",
        "-cp",
        str(config.LIB / "kafka" / "*"),
        main,
        *args,
    ]


def _log4j() -> Path:
    path = DATA / "log4j2.properties"
    path.write_text(
        "rootLogger.level=WARN\nrootLogger.appenderRef.stdout.ref=STDOUT\n"
        "appender.stdout.type=Console\nappender.stdout.name=STDOUT\n"
        "appender.stdout.layout.type=PatternLayout\nappender.stdout.layout.pattern=[%d] %p %m (%c)%n\n"
        "logger.kafka.name=kafka.server.KafkaRaftServer\nlogger.kafka.level=INFO\n"
    )
    return path


def start() -> int:
    procs.require_free(config.KAFKA_PORT, "Kafka", "SANLENS_KAFKA_PORT")
    procs.require_free(config.KAFKA_CONTROLLER_PORT, "the Kafka controller", "SANLENS_KAFKA_CONTROLLER_PORT")
    java = require_java()
    DATA.mkdir(parents=True, exist_ok=True)
    meta = DATA / "logs" / "meta.properties"
    if not meta.exists():
        if (DATA / "logs").exists() and any((DATA / "logs").iterdir()):
            raise SanlensError(
                f"the Kafka state folder {DATA / 'logs'} is corrupted (no meta.properties): "
                "run `./sanlens down --purge` to start afresh"
            )
        out = subprocess.run(
            _java_argv(
                java,
                "kafka.tools.StorageTool",
                "format",
                "-t",
                CLUSTER_ID,
                "-c",
                str(_properties()),
                "--add-scram",
                f"{settings.KAFKA_MECHANISM}=[name={settings.KAFKA_ADMIN},password={passwords()[settings.KAFKA_ADMIN]}]",
            ),
            capture_output=True,
            text=True,
            env=config.tool_env(),
        )
        if out.returncode != 0:
            raise SanlensError(
                f"formatting Kafka storage failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}"
            )
        SASL_MARK.write_text("formatted with the admin's SCRAM credentials\n")
    elif f"cluster.id={CLUSTER_ID}" not in meta.read_text(errors="replace"):
        raise SanlensError(
            f"the Kafka state folder {DATA / 'logs'} is corrupted (unreadable meta.properties): "
            "run `./sanlens down --purge` to start afresh"
        )
    unmarked = not SASL_MARK.exists()  # formatted before Kafka required logins: no admin credentials yet
    pid = procs.start(NAME, _java_argv(java, "kafka.Kafka", str(_properties(admin_plain=unmarked))), config.tool_env())
    if unmarked:
        _add_admin_scram()
    return pid


def _add_admin_scram(timeout_s: float = 120) -> None:
    """A data folder from before SASL: log in as the admin with PLAIN (this start only) and add its SCRAM credentials;
    the next start of the broker takes SCRAM alone. `topics.ensure` then adds the other principals' and the ACLs."""
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    admin = settings.KAFKA_ADMIN
    client = AdminClient({**settings.kafka_client(admin), "sasl.mechanism": "PLAIN", "log_level": 0})
    upsert = UserScramCredentialUpsertion(
        admin, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), passwords()[admin].encode()
    )
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        try:
            client.alter_user_scram_credentials([upsert])[admin].result(timeout=10)
            SASL_MARK.write_text("the admin's SCRAM credentials added to a data folder formatted without them\n")
            print("    kafka: added the admin's SCRAM credentials to a data folder made before SASL", file=sys.stderr)
            return
        except Exception as exc:  # the broker is still starting
            last = exc
            time.sleep(1)
    raise SanlensError(f"could not add the Kafka admin's SCRAM credentials to {DATA / 'logs'}: {last}")


def probe() -> dict:
    """A metadata request: the broker answers with itself and the topics it has."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({**settings.kafka_client(), "socket.timeout.ms": 3000, "log_level": 0}).list_topics(timeout=3)
    topics = [t for t in md.topics if not t.startswith("__")]
    version = next(
        (p.name.split("-")[1].removesuffix(".jar") for p in (config.LIB / "kafka").glob("kafka_2.13-*.jar")), "?"
    )
    return {
        "healthy": bool(md.brokers),
        "port": PORT,
        "version": version,
        "detail": f"{len(md.brokers)} broker, {len(topics)} topics",
    }
