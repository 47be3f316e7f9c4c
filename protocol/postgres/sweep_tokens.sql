-- sweep, step 2: tokens. No parameters.
-- Reply: one row (0 int8, rows deleted int8). Up to 1,000 expired tokens, as sweep_records.

WITH d AS (
  DELETE FROM {p}tokens WHERE (scope, token) IN (
    SELECT scope, token FROM {p}tokens WHERE expires_at <= {now} LIMIT 1000 FOR UPDATE SKIP LOCKED)
  RETURNING 1)
SELECT 0::int8, count(*) FROM d
