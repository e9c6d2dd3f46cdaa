-- The inventory's fields that sanlens.topology had no column for, and that the loader dropped without a word while
-- it skipped unknown fields: an array's volumes, a switch's port count, a path's databases (docs/contract.md,
-- inventory.topology). The loader now refuses a field no column takes, into the dead letters.
ALTER TABLE sanlens.topology
    ADD COLUMN IF NOT EXISTS volumes Array(LowCardinality(String)) AFTER queue_depth,
    ADD COLUMN IF NOT EXISTS ports UInt16 AFTER volumes,
    ADD COLUMN IF NOT EXISTS databases Array(LowCardinality(String)) AFTER ports;
