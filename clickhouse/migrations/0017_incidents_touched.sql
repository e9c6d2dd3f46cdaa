-- Incidents name what people manage: the view sanlens.incidents (0009) merges a component's path incidents as
-- before, and adds the hosts, volumes (array:volume) and arrays of the paths it touched, the volumes and arrays
-- from the inventory's paths as they were while it lasted (the version it started on and any published during
-- it: a path recabled or moved to another volume); and worst_excess_us, the largest excess of one of its paths,
-- which says what made a severe one severe: 80 ms or more on a path, else frames lost (the breakdown job's rule,
-- flink-jobs/breakdown/README.md, "Incidents"). The dashboards, ./sanlens explain and, through the dbt mart
-- sanlens_marts.latency_incidents, the report read it.
CREATE OR REPLACE VIEW sanlens.incidents AS
WITH merged AS (
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
        max(path_excess) AS worst_excess_us,
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
    GROUP BY site, contributor, component, episode
),

-- each incident's paths as host:disk (a path is host:disk:direction)
incident_paths AS (
    SELECT DISTINCT incident_id, site, started_at,
        coalesce(ended_at, last_window + toIntervalSecond(10)) AS until,
        substring(path, 1, length(path) - position(reverse(path), ':')) AS host_disk
    FROM merged ARRAY JOIN paths AS path
),

-- the inventory's versions of those paths valid while the incident lasted
path_versions AS (
    SELECT p.incident_id AS incident_id, p.site AS site, v.array AS array, v.volume AS volume,
        v.valid_from AS valid_from,
        max(if(v.valid_from <= p.started_at, v.valid_from, NULL)) OVER (
            PARTITION BY p.incident_id, p.host_disk) AS started_on
    FROM incident_paths AS p
    INNER JOIN (
        SELECT site, concat(host, ':', disk) AS host_disk, array, volume, valid_from
        FROM sanlens.topology FINAL
        WHERE kind = 'path'
    ) AS v ON v.site = p.site AND v.host_disk = p.host_disk
    WHERE v.valid_from < p.until
),

touched AS (
    SELECT incident_id, site,
        arraySort(groupUniqArray(concat(array, ':', volume))) AS volumes,
        arraySort(groupUniqArray(array)) AS arrays
    FROM path_versions
    WHERE started_on IS NULL OR valid_from >= started_on
    GROUP BY incident_id, site
)

SELECT
    m.incident_id AS incident_id,
    m.contributor AS contributor,
    m.component AS component,
    m.site AS site,
    m.started_at AS started_at,
    m.ended_at AS ended_at,
    m.is_open AS is_open,
    m.last_window AS last_window,
    m.excess_us AS excess_us,
    m.worst_excess_us AS worst_excess_us,
    m.baseline_us AS baseline_us,
    m.peak_us AS peak_us,
    m.severity AS severity,
    m.paths AS paths,
    arraySort(arrayDistinct(arrayMap(p -> splitByChar(':', p)[1], m.paths))) AS hosts,
    t.volumes AS volumes,
    t.arrays AS arrays,
    m.ios AS ios
FROM merged AS m
LEFT JOIN touched AS t ON t.incident_id = m.incident_id AND t.site = m.site;
