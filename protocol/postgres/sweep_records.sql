-- sweep, step 1: records. No parameters.
-- Reply: one row (records that went int8, rows deleted int8).
-- Up to 1,000 rows, skipping rows that operations hold, so a sweep never waits for (or
-- deadlocks with) them: expired records, and tombstones {grace} after they went. Run again
-- while it deletes 1,000.

WITH d AS (
  DELETE FROM {p}records WHERE (scope, key) IN (
    SELECT scope, key FROM {p}records
    WHERE expires_at <= {now} AND (state <> 'free' OR expires_at <= {now} - {grace})
    LIMIT 1000 FOR UPDATE SKIP LOCKED)
  RETURNING state)
SELECT count(*) FILTER (WHERE state <> 'free'), count(*) FROM d
