"""Apache Kafka 4.x, one KRaft node (broker and controller) on loopback, data under .sanlens/run/kafka."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sanlensctl import config, procs
from sanlensctl.errors import SanlensError
from sanlensctl.install import require_java

NAME = "kafka"
PROCESSES = [NAME]
PORT = config.KAFKA_PORT
DATA = config.RUN / "kafka"
CLUSTER_ID = "c2FubGVucy1sb2NhbC0x"  # fixed: the local stack has one cluster, formatted once


def _properties() -> Path:
    props = DATA / "server.properties"
    props.write_text(
        "\n".join(
            [
                "process.roles=broker,controller",
                "node.id=1",
                f"controller.quorum.voters=1@127.0.0.1:{config.KAFKA_CONTROLLER_PORT}",
                f"listeners=PLAINTEXT://127.0.0.1:{config.KAFKA_PORT},CONTROLLER://127.0.0.1:{config.KAFKA_CONTROLLER_PORT}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{config.KAFKA_PORT}",
                "controller.listener.names=CONTROLLER",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name=PLAINTEXT",
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
    props = _properties()
    meta = DATA / "logs" / "meta.properties"
    if not meta.exists():
        if (DATA / "logs").exists() and any((DATA / "logs").iterdir()):
            raise SanlensError(
                f"the Kafka state folder {DATA / 'logs'} is corrupted (no meta.properties): "
                "run `./sanlens down --purge` to start afresh"
            )
        out = subprocess.run(
            _java_argv(java, "kafka.tools.StorageTool", "format", "-t", CLUSTER_ID, "-c", str(props)),
            capture_output=True,
            text=True,
            env=config.tool_env(),
        )
        if out.returncode != 0:
            raise SanlensError(
                f"formatting Kafka storage failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}"
            )
    elif f"cluster.id={CLUSTER_ID}" not in meta.read_text(errors="replace"):
        raise SanlensError(
            f"the Kafka state folder {DATA / 'logs'} is corrupted (unreadable meta.properties): "
            "run `./sanlens down --purge` to start afresh"
        )
    return procs.start(NAME, _java_argv(java, "kafka.Kafka", str(props)), config.tool_env())


def probe() -> dict:
    """A metadata request: the broker answers with itself and the topics it has."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient(
        {"bootstrap.servers": config.KAFKA_BOOTSTRAP, "socket.timeout.ms": 3000, "log_level": 0}
    ).list_topics(timeout=3)
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
