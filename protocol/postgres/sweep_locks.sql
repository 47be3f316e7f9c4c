-- sweep, step 3: locks. No parameters.
-- Reply: one row (0 int8, rows deleted int8). Up to 1,000 locks {grace} past their end, as
-- sweep_records.

WITH d AS (
  DELETE FROM {p}locks WHERE name IN (
    SELECT name FROM {p}locks WHERE expires_at <= {now} - {grace} LIMIT 1000 FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT 0::int8, count(*) FROM d
