-- Incidents along each path (telemetry.incidents, written by the breakdown job): a run of windows in which one
-- contributor's part on one component of a path stayed above the baseline learnt from that path's own normal
-- windows. The job sends an incident when it opens, at every window it lasts and when it closes; last_window
-- grows with each, so the ReplacingMergeTree keeps the latest state. ended_at is NULL while it is open. The
-- mart sanlens_marts.latency_incidents merges the overlapping incidents of a component's paths into one.
-- Read with FINAL.
CREATE TABLE IF NOT EXISTS sanlens.path_incidents
(
    incident_id     String,
    contributor     LowCardinality(String),
    component       String,
    path            String,
    site            LowCardinality(String),
    started_at      DateTime64(3, 'UTC'),
    ended_at        Nullable(DateTime64(3, 'UTC')),
    last_window     DateTime64(3, 'UTC'),
    windows         UInt32,
    ios             UInt64,
    baseline_us     Float64,
    excess_us       Float64,
    peak_us         Float64,
    severity        LowCardinality(String),
    kafka_partition UInt16,
    kafka_offset    UInt64,
    loaded_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(last_window)
ORDER BY (site, contributor, component, path, started_at)
TTL toDateTime(started_at) + INTERVAL 90 DAY;

-- Incidents as an admin sees them: one per component and episode. A component's path incidents that overlap
-- or follow each other within two windows (20 s) are one, from the first start to the last end, open while
-- one is, its excess I/O-weighted over the paths. The one definition of the merge: the dashboards read this
-- view, the dbt mart sanlens_marts.latency_incidents adds the customer.
CREATE VIEW IF NOT EXISTS sanlens.incidents AS
SELECT
    concat(contributor, '|', component, '|', toString(min(path_start))) AS incident_id,
    contributor,
    component,
    site,
    min(path_start) AS started_at,
    if(countIf(path_end IS NULL) > 0, NULL, max(path_end)) AS ended_at,
    countIf(path_end IS NULL) > 0 AS is_open,
    max(path_last) AS last_window,
    sum(path_excess * path_ios) / sum(path_ios) AS excess_us,
    min(path_baseline) AS baseline_us,
    max(path_peak) AS peak_us,
    if(countIf(path_severity = 'severe') > 0, 'severe', 'warning') AS severity,
    arraySort(groupUniqArray(path)) AS paths,
    sum(path_ios) AS ios
FROM
(
    -- a new episode starts when none of the component's earlier path incidents is open or ended within 20 s
    SELECT *, sum(earlier_open = 0 AND ifNull(path_start > earlier_end + toIntervalSecond(20), 1)) OVER (
        PARTITION BY site, contributor, component ORDER BY path_start, path
        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS episode
    FROM
    (
        SELECT contributor, component, site, path, started_at AS path_start, ended_at AS path_end,
            last_window AS path_last, excess_us AS path_excess, ios AS path_ios, baseline_us AS path_baseline,
            peak_us AS path_peak, severity AS path_severity,
            countIf(ended_at IS NULL) OVER earlier AS earlier_open,
            max(ended_at) OVER earlier AS earlier_end
        FROM sanlens.path_incidents FINAL
        WINDOW earlier AS (PARTITION BY site, contributor, component ORDER BY started_at, path
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
    )
)
GROUP BY site, contributor, component, episode;
