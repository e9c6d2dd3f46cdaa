"""Kafka's principals (ingest/kafka_access.py) against what uses them: every job has one, the compose file hands each
its password from the environment, the Telegraf configs log in as the agents with a password from the environment."""

from __future__ import annotations

import re

import yaml

from ingest import kafka_access, topics
from tests.support import ROOT


def test_every_flink_job_has_a_principal_that_reads_and_writes_contract_topics():
    jobs = {p.parent.name for p in (ROOT / "flink-jobs").glob("*/job.py")}
    assert jobs == set(kafka_access.JOBS)
    for job in jobs:
        may = kafka_access.ACLS[kafka_access.job_principal(job)]
        assert may["read"] and may["write"], job
        assert set(may["read"]) | set(may["write"]) <= set(topics.CONTRACT), job
        assert may["transactions"] == (f"sanlens-{job}-",)  # runtime.kafka_sink: f"{group}-{table}"
    assert kafka_access.ACLS[kafka_access.AGENTS].get("read") is None
    assert kafka_access.ACLS[kafka_access.AGENTS].get("groups") is None


def test_the_compose_file_gives_every_principal_its_password_from_the_environment():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = compose["services"]["topics"]["environment"]
    for principal in kafka_access.PRINCIPALS:
        var = f"SANLENS_KAFKA_{principal.upper().replace('-', '_')}_PASSWORD"
        assert env[var] == f"${{{var}:?set a password}}", principal


def test_the_telegraf_configs_log_in_as_the_agents_with_a_password_from_the_environment():
    for conf in (ROOT / "ingest" / "telegraf").glob("*/telegraf.conf"):
        text = conf.read_text()
        outputs = text.count("[[outputs.kafka]]")
        assert outputs, conf
        assert text.count('sasl_mechanism = "SCRAM-SHA-512"') == outputs, conf
        assert text.count(f'sasl_username = "{kafka_access.AGENTS}"') == outputs, conf
        assert text.count('sasl_password = "${SANLENS_KAFKA_AGENTS_PASSWORD}"') == outputs, conf
        assert not re.search(r"sasl_password\s*=\s*\"[^$]", text), conf
