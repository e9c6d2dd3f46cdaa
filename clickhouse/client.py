"""The one way the project talks to ClickHouse: clickhouse-connect over the HTTP interface, from a URL.
Without one: the settings' (SANLENS_CLICKHOUSE_URL, else the local stack's). The user: `user`, else the URL's, else
SANLENS_CLICKHOUSE_USER (the admin, `sanlens`); its password: `password`, else the URL's, else
SANLENS_CLICKHOUSE_PASSWORD, else the user's in the local stack's passwords file (ingest/settings.py,
clickhouse/roles.py): every request carries credentials, and a server refuses one without."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

import clickhouse_connect

from ingest import settings


def credentials(url: str | None = None, user: str | None = None, password: str | None = None) -> tuple[str, str]:
    parts = urlsplit(url or settings.CLICKHOUSE_URL)
    user = user or (unquote(parts.username) if parts.username else None) or settings.CLICKHOUSE_USER
    if password is None:
        password = unquote(parts.password) if parts.password else settings.clickhouse_password(user)
    return user, password


def connect(url: str | None = None, user: str | None = None, password: str | None = None, **kwargs):
    parts = urlsplit(url or settings.CLICKHOUSE_URL)
    username, password = credentials(url, user, password)
    return clickhouse_connect.get_client(
        host=parts.hostname,
        port=parts.port or (8443 if parts.scheme == "https" else settings.PORTS["CLICKHOUSE"]),
        secure=parts.scheme == "https",
        username=username,
        password=password,
        **kwargs,
    )
