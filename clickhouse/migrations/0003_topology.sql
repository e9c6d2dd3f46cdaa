-- The inventory (inventory.topology), every version kept: which host disk is which array volume via
-- which HBA and switch ports, and each array's model and firmware since valid_from. The firmware
-- timeline of an array is its kind = 'array' rows in valid_from order.
CREATE TABLE IF NOT EXISTS sanlens.topology
(
    valid_from        DateTime64(3, 'UTC'),
    kind              LowCardinality(String),
    customer          LowCardinality(String),
    site              LowCardinality(String),
    array             LowCardinality(String),
    model             LowCardinality(String),
    media             LowCardinality(String),
    firmware          LowCardinality(String),
    switch            LowCardinality(String),
    host              LowCardinality(String),
    disk              LowCardinality(String),
    volume            LowCardinality(String),
    host_port         LowCardinality(String),
    sql_instance      LowCardinality(String),
    host_switch_port  LowCardinality(String),
    array_switch_port LowCardinality(String),
    hops              UInt8,
    distance_km       Float64,
    queue_depth       UInt32,
    kafka_partition   UInt16,
    kafka_offset      UInt64,
    loaded_at         DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
ORDER BY (kind, array, host, disk, switch, valid_from);
