-- A path's SLO entity is host:disk with a drive letter's own colon dropped: acme-sql2:D, no longer acme-sql2:D:,
-- whose trailing colon read as a name with a part missing (flink-jobs/burn_rates/tables.py, ENTITY). The windows
-- and alerts the burn_rates job wrote before are renamed the same way, so that an entity has one name over its
-- whole period. The entity is part of both tables' sorting keys, which ClickHouse cannot update in place: the
-- rows are written again under the new name, then the old ones deleted. Only a path entity on a drive letter
-- ends with a colon (a host's is its name, a volume's array:volume).
INSERT INTO sanlens.slo_windows (slo, entity, path, site, window_start, bucket, good, total, objective,
    kafka_partition, kafka_offset, loaded_at)
SELECT slo, substring(entity, 1, length(entity) - 1), path, site, window_start, bucket, good, total, objective,
    kafka_partition, kafka_offset, loaded_at
FROM sanlens.slo_windows
WHERE endsWith(entity, ':');

DELETE FROM sanlens.slo_windows WHERE endsWith(entity, ':');

INSERT INTO sanlens.slo_alerts (ts, slo, entity, site, severity, state, burn_5m, burn_30m, burn_1h, burn_2h,
    burn_6h, burn_1d, burn_3d, budget_left, period_good, period_total, kafka_partition, kafka_offset, loaded_at)
SELECT ts, slo, substring(entity, 1, length(entity) - 1), site, severity, state, burn_5m, burn_30m, burn_1h,
    burn_2h, burn_6h, burn_1d, burn_3d, budget_left, period_good, period_total, kafka_partition, kafka_offset,
    loaded_at
FROM sanlens.slo_alerts
WHERE endsWith(entity, ':');

DELETE FROM sanlens.slo_alerts WHERE endsWith(entity, ':');
