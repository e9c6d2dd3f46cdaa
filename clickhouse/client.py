"""The one way the project talks to ClickHouse: clickhouse-connect over the HTTP interface, from a URL.
Without one: SANLENS_CLICKHOUSE_URL, else the local stack's http://127.0.0.1:8123; the user and password
come from the URL, else SANLENS_CLICKHOUSE_USER and SANLENS_CLICKHOUSE_PASSWORD."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import clickhouse_connect

DEFAULT_URL = "http://127.0.0.1:8123"


def connect(url: str | None = None, **kwargs):
    parts = urlsplit(url or os.environ.get("SANLENS_CLICKHOUSE_URL", DEFAULT_URL))
    return clickhouse_connect.get_client(
        host=parts.hostname,
        port=parts.port or 8123,
        secure=parts.scheme == "https",
        username=parts.username or os.environ.get("SANLENS_CLICKHOUSE_USER", "default"),
        password=parts.password or os.environ.get("SANLENS_CLICKHOUSE_PASSWORD", ""),
        **kwargs,
    )
