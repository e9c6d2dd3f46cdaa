-- Per 10 s window, SQL Server's batch requests/s on each host.
select
    host,
    toStartOfInterval(ts, toIntervalSecond(10)) as window_start,
    avg(value) as batch_requests
from {{ ref('stg_metrics') }}
where metric = 'sql.batch_requests'
group by host, window_start
