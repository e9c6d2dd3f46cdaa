-- A path's transport (fc | iscsi) and its host's MPIO load-balance policy for the disk (docs/contract.md,
-- inventory.topology): the dimensions the studies compare latency by. Rows loaded before are empty.
ALTER TABLE sanlens.topology
    ADD COLUMN IF NOT EXISTS transport LowCardinality(String) AFTER queue_depth,
    ADD COLUMN IF NOT EXISTS multipath_policy LowCardinality(String) AFTER transport;
