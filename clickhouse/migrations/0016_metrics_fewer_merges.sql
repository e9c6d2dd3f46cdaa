-- sanlens.metrics merges parts only once their sum is forty times the largest of them (ClickHouse's default: five,
-- lowered as parts pile up), so each row is rewritten about once on its way into the day's large parts instead of
-- about four times. Inserting 51 M rows of 1,000 arrays × 50 volumes as the loader does and merging them took the
-- embedded server 3.0 to 3.3 µs of CPU a row, 1.7 to 1.9 of them merging; with this, 1.9 to 2.1, for 13 parts
-- instead of 8 or 9 at the end (docs/benchmarks.md, "Where 1,000 arrays fall behind; the merges of sanlens.metrics").
ALTER TABLE sanlens.metrics MODIFY SETTING merge_selector_base = 40;
