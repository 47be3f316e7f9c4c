-- Run instead of schema.sql by a store opened with create_tables=false: reads no row, and fails
-- (SQLSTATE 42P01 no such table, 42703 no such column) when a table or a column this version
-- uses is missing. The store then refuses to open and names `idem schema`, which prints
-- schema.sql for a DBA to run. Reply: no rows.

SELECT scope, key, state, fence, fingerprint, lease_until, expires_at, result, recovered, owner, previous_fence FROM {p}records LIMIT 0;
SELECT scope, token, consumed, ttl_us, expires_at FROM {p}tokens LIMIT 0;
SELECT name, owner, fence, expires_at, unlocked FROM {p}locks LIMIT 0;
