"""ClickHouse of the stack this command line manages (clickhouse/client.py is the one way to connect)."""

from __future__ import annotations

from clickhouse.client import connect
from sanlensctl import config
from sanlensctl.errors import SanlensError


def client(url: str | None = None, user: str | None = None, **kwargs):
    """A client of the stack's ClickHouse as `user` (default: the admin, SANLENS_CLICKHOUSE_USER), with its password."""
    return connect(url or config.CLICKHOUSE_URL, user=user, **kwargs)


def reachable(url: str | None = None):
    """client(), or the one-line error that says what to do when ClickHouse does not answer."""
    try:
        return client(url)
    except Exception as exc:
        raise SanlensError(
            f"cannot reach ClickHouse at {url or config.CLICKHOUSE_URL}: start the stack with ./sanlens up"
        ) from exc
