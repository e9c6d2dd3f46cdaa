"""Who may do what on Kafka: the one definition of the principals and their ACLs
(docs/security.md#who-may-do-what-on-kafka).

`./sanlens topics` (and `./sanlens up`, and the compose file's `topics` service) makes every principal's SCRAM
credentials and these ACLs on the broker, idempotently; the broker denies everything else
(`allow.everyone.if.no.acl.found=false`), except to its super user, `admin` (settings.KAFKA_ADMIN).

Each entry: principal -> {"read": topic ids it consumes, "write": topic ids it produces to, "groups": consumer
group prefixes it may use, "transactions": transactional id prefixes (Flink's exactly-once sinks)}. Topic ids are
those of ingest/topics.yaml. Standard library and ingest/topics only.
"""

from __future__ import annotations

from ingest import topics

JOBS = ("normalize", "histograms", "breakdown", "tiering", "burn_rates")
AGENTS, INVENTORY, LOADER, NOTIFIER = "agents", "inventory", "loader", "notifier"


def job_principal(job: str) -> str:
    """The principal a Flink job reads and writes as."""
    return f"job-{job.replace('_', '-')}"


def _job(job: str, read: tuple[str, ...], write: tuple[str, ...]) -> dict[str, dict[str, tuple[str, ...]]]:
    """A Flink job's entry: its topics, its consumer groups and its exactly-once sinks' transactional ids, both
    named after its group (`sanlens-<job>`; runtime.kafka_sink: f"{group}-{table}")."""
    return {
        job_principal(job): {
            "read": read,
            "write": write,
            "groups": (f"sanlens-{job}",),
            "transactions": (f"sanlens-{job}-",),
        }
    }


ACLS: dict[str, dict[str, tuple[str, ...]]] = {
    # Telegraf (every agent and poller) and the simulator, which stands in for them: send only, samples and the
    # agents' own heartbeat (telemetry.agent).
    AGENTS: {"write": (topics.METRICS, topics.AGENT)},
    # The inventory's publisher (a CMDB export; the simulator's inventory): inventory.topology alone. It says which
    # customer each site is, which the store's row policies go by, so the agents' password (on every customer's
    # hosts) must not write it: with it, one customer's host could assign another's sites to its own customer.
    INVENTORY: {"write": (topics.TOPOLOGY,)},
    **_job("normalize", read=(topics.METRICS,), write=(topics.SAMPLES, topics.DEADLETTER, topics.ACCOUNTING)),
    **_job("histograms", read=(topics.SAMPLES,), write=(topics.HISTOGRAMS,)),
    **_job("breakdown", read=(topics.SAMPLES, topics.TOPOLOGY), write=(topics.BREAKDOWN, topics.INCIDENTS)),
    **_job("tiering", read=(topics.SAMPLES,), write=(topics.TIER_EPISODES,)),
    **_job(
        "burn_rates",
        read=(topics.HISTOGRAMS, topics.BREAKDOWN, topics.TOPOLOGY),
        write=(topics.SLO_WINDOWS, topics.SLO_ALERTS),
    ),
    # the loader: every output topic into ClickHouse; what it cannot load goes to the dead letters
    LOADER: {
        "read": (
            topics.SAMPLES,
            topics.DEADLETTER,
            topics.ACCOUNTING,
            topics.TOPOLOGY,
            topics.HISTOGRAMS,
            topics.BREAKDOWN,
            topics.INCIDENTS,
            topics.TIER_EPISODES,
            topics.SLO_WINDOWS,
            topics.SLO_ALERTS,
        ),
        "write": (topics.DEADLETTER,),
        "groups": ("sanlens-loader",),
    },
    NOTIFIER: {"read": (topics.SLO_ALERTS,), "groups": ("sanlens-notifier",)},
}

PRINCIPALS = ("admin", *ACLS)


def bindings() -> list[tuple[str, str, str, str, str]]:
    """Every ACL as (principal, resource type, pattern type, resource name, operation), all ALLOW from any host."""
    out = []
    for principal, may in ACLS.items():
        for topic in may.get("read", ()):
            out.append((principal, "TOPIC", "LITERAL", topic, "READ"))
            out.append((principal, "TOPIC", "LITERAL", topic, "DESCRIBE"))
        for topic in may.get("write", ()):
            out.append((principal, "TOPIC", "LITERAL", topic, "WRITE"))
            out.append((principal, "TOPIC", "LITERAL", topic, "DESCRIBE"))
        for group in may.get("groups", ()):
            out.append((principal, "GROUP", "PREFIXED", group, "READ"))
            out.append((principal, "GROUP", "PREFIXED", group, "DESCRIBE"))
        for prefix in may.get("transactions", ()):
            out.append((principal, "TRANSACTIONAL_ID", "PREFIXED", prefix, "WRITE"))
            out.append((principal, "TRANSACTIONAL_ID", "PREFIXED", prefix, "DESCRIBE"))
        if may.get("write"):
            # idempotent producers (librdkafka's and Flink's defaults)
            out.append((principal, "BROKER", "LITERAL", "kafka-cluster", "IDEMPOTENT_WRITE"))
    return sorted(set(out))
