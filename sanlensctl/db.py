"""ClickHouse of the stack this command line manages (clickhouse/client.py is the one way to connect)."""

from __future__ import annotations

from clickhouse.client import connect
from sanlensctl import config


def client(url: str | None = None, **kwargs):
    return connect(url or config.CLICKHOUSE_URL, **kwargs)
