"""The components the supervisor restarts when a process of theirs dies, in the order `./sanlens up` starts them
(the supervisor itself starts after them: stack.py)."""

from __future__ import annotations

from sanlensctl.components import alertmanager, clickhouse, flink, inbox, kafka, loader, notifier, telegraf

COMPONENTS = [clickhouse, kafka, flink, loader, telegraf, inbox, alertmanager, notifier]
