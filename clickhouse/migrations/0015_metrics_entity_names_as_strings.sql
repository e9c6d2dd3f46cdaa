-- The entity names of sanlens.metrics as plain strings: LowCardinality stays for the few values of metric, unit
-- and site. An install base has tens of thousands of hosts and thousands of arrays, and merging parts whose
-- LowCardinality dictionaries hold that many names was most of the embedded ClickHouse's CPU at 1,000 arrays
-- × 50 volumes every 10 s: one merge of 13.2 M such rows took 29 CPU-s with every name LowCardinality, 12 with
-- these as strings (docs/benchmarks.md, "... the samples' entity names as plain strings").
ALTER TABLE sanlens.metrics
    MODIFY COLUMN host String,
    MODIFY COLUMN disk String,
    MODIFY COLUMN sql_instance String,
    MODIFY COLUMN database String,
    MODIFY COLUMN file String,
    MODIFY COLUMN array String,
    MODIFY COLUMN volume String,
    MODIFY COLUMN host_port String,
    MODIFY COLUMN switch String,
    MODIFY COLUMN port String;
