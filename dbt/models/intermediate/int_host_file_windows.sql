-- Per 10 s window, host and disk: sys.dm_io_virtual_file_stats latency of the database files, I/O-weighted over
-- the files and both directions.
select
    host, disk, window_start,
    sum(reads * read_us + writes * write_us) / nullIf(sum(reads + writes), 0) as file_us
from (
    select
        host, disk, file,
        toStartOfInterval(ts, toIntervalSecond(10)) as window_start,
        anyIf(value, metric = 'file.reads') as reads,
        anyIf(value, metric = 'file.writes') as writes,
        anyIf(value, metric = 'file.read_latency') as read_us,
        anyIf(value, metric = 'file.write_latency') as write_us
    from {{ ref('stg_metrics') }}
    where metric in ('file.reads', 'file.writes', 'file.read_latency', 'file.write_latency')
    group by host, disk, file, window_start
)
group by host, disk, window_start
