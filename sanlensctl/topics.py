"""Creates the Kafka topics of the contract (ingest/topics.yaml) if they are missing, and makes every principal's
SCRAM credentials and the ACLs of ingest/kafka_access.py (removing ACLs the definition no longer has)."""

from __future__ import annotations

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from ingest import kafka_access, settings
from ingest.topics import CONTRACT
from sanlensctl import config


def ensure(bootstrap: str | None = None) -> list[str]:
    admin = AdminClient({**settings.kafka_client(bootstrap=bootstrap or config.KAFKA_BOOTSTRAP), "log_level": 0})
    existing = set(admin.list_topics(timeout=10).topics)
    wanted = []
    for name, spec in CONTRACT.items():
        if name in existing:
            continue
        topic_config = (
            {"cleanup.policy": "compact"}
            if spec.get("compacted")
            else {"retention.ms": str(int(spec.get("retention_hours", 72) * 3600 * 1000))}
        )
        topic_config.update({k: str(v) for k, v in spec.get("config", {}).items()})
        wanted.append(NewTopic(name, num_partitions=spec["partitions"], replication_factor=1, config=topic_config))
    for future in admin.create_topics(wanted).values() if wanted else []:
        future.result(timeout=30)
    ensure_access(admin)
    return [t.topic for t in wanted]


def _binding(principal: str, resource: str, pattern: str, name: str, operation: str) -> AclBinding:
    return AclBinding(
        ResourceType[resource],
        name,
        ResourcePatternType[pattern],
        f"User:{principal}",
        "*",
        AclOperation[operation],
        AclPermissionType.ALLOW,
    )


def ensure_access(admin: AdminClient) -> None:
    """Every principal's credentials (its password of now) and exactly the ACLs of kafka_access.ACLS."""
    upserts = []
    for principal in kafka_access.ACLS:
        password = settings.kafka_password(principal)
        if not password:
            raise RuntimeError(
                f"no Kafka password for '{principal}' (SANLENS_KAFKA_{principal.upper().replace('-', '_')}_PASSWORD "
                f"or {settings.KAFKA_PASSWORDS})"
            )
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
        upserts.append(UserScramCredentialUpsertion(principal, info, password.encode()))
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(timeout=30)
    wanted = {_binding(*b) for b in kafka_access.bindings()}
    have = admin.describe_acls(
        AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
        )
    ).result(timeout=30)
    stale = [b for b in have if b not in wanted]
    if stale:
        for future in admin.delete_acls(
            [
                AclBindingFilter(
                    b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type
                )
                for b in stale
            ]
        ).values():
            future.result(timeout=30)
    missing = [b for b in wanted if b not in set(have)]
    if missing:
        for future in admin.create_acls(missing).values():
            future.result(timeout=30)
