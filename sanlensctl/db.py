"""The one way the project talks to ClickHouse: clickhouse-connect with a URL."""
from __future__ import annotations

from urllib.parse import urlsplit

import clickhouse_connect

from sanlensctl import config


def client(url: str | None = None, **kwargs):
    parts = urlsplit(url or config.CLICKHOUSE_URL)
    return clickhouse_connect.get_client(
        host=parts.hostname, port=parts.port or 8123, secure=parts.scheme == "https",
        username=parts.username or config.CLICKHOUSE_USER, password=parts.password or config.CLICKHOUSE_PASSWORD,
        **kwargs)
