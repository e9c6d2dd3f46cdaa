"""The local stack components, in start order: clickhouse, kafka, flink, loader, telegraf (see stack.py)."""
