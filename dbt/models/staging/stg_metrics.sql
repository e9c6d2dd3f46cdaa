-- One row per normalized sample, with its entity keys; the Kafka position columns stay behind.
select
    ts,
    metric,
    value,
    unit,
    site,
    host,
    disk,
    sql_instance,
    database,
    file,
    array,
    volume,
    host_port,
    switch,
    port
from {{ source('sanlens', 'metrics') }}
