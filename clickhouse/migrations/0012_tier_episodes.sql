-- Tier-migration episodes (telemetry.tier_episodes, written by the tiering job): a hybrid volume's Tier 0 share
-- moving beyond its noise, from the last window of its old level (started_at) to the window it settled
-- (settled_at, NULL while it still moves). The job sends an episode when it is confirmed, at every window it
-- lasts and when it settles; last_window grows with each, so the ReplacingMergeTree keeps the latest state.
-- The dbt mart sanlens_marts.tier_migration_effects measures what each did to the array, the hosts and SQL
-- Server. Read with FINAL.
CREATE TABLE IF NOT EXISTS sanlens.tier_episodes
(
    episode_id          String,
    array               LowCardinality(String),
    volume              LowCardinality(String),
    site                LowCardinality(String),
    direction           LowCardinality(String),
    started_at          DateTime64(3, 'UTC'),
    detected_at         DateTime64(3, 'UTC'),
    settled_at          Nullable(DateTime64(3, 'UTC')),
    last_window         DateTime64(3, 'UTC'),
    windows             UInt32,
    tier0_share_before  Float64,
    tier0_share_reached Float64,
    tier0_bytes_reached Float64,
    noise               Float64,
    page_moves_up       Float64,
    page_moves_down     Float64,
    kafka_partition     UInt16,
    kafka_offset        UInt64,
    loaded_at           DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(last_window)
ORDER BY (site, array, volume, started_at)
TTL toDateTime(started_at) + INTERVAL 400 DAY;
