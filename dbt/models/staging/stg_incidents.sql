-- Incidents per component and episode (the view sanlens.incidents over the breakdown job's path incidents).
select
    incident_id,
    contributor,
    component,
    site,
    started_at,
    ended_at,
    is_open,
    last_window,
    excess_us,
    worst_excess_us,
    baseline_us,
    peak_us,
    severity,
    paths,
    hosts,
    volumes,
    arrays,
    ios
from {{ source('sanlens', 'incidents') }}
