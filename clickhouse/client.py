"""The one way the project talks to ClickHouse: clickhouse-connect over the HTTP interface, from a URL.
Without one: the settings' (SANLENS_CLICKHOUSE_URL, else the local stack's); the user and password come from the
URL, else SANLENS_CLICKHOUSE_USER and SANLENS_CLICKHOUSE_PASSWORD (ingest/settings.py)."""

from __future__ import annotations

from urllib.parse import urlsplit

import clickhouse_connect

from ingest import settings


def connect(url: str | None = None, **kwargs):
    parts = urlsplit(url or settings.CLICKHOUSE_URL)
    return clickhouse_connect.get_client(
        host=parts.hostname,
        port=parts.port or (8443 if parts.scheme == "https" else settings.PORTS["CLICKHOUSE"]),
        secure=parts.scheme == "https",
        username=parts.username or settings.CLICKHOUSE_USER,
        password=parts.password or settings.CLICKHOUSE_PASSWORD,
        **kwargs,
    )
