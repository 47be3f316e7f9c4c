-- sweep, step 1: records that went (expired, not tombstones), by the expires_at index.
-- Statements: 1. Reply: rows deleted; run again while it deletes 1,000 (each run a short
-- transaction of its own).

DELETE FROM {p}records WHERE expires_at <= {now} AND state <> 'free' LIMIT 1000;
