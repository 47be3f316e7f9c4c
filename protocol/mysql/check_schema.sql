-- Run instead of schema.sql by a store opened with create_tables=false: reads no row, and fails
-- (error 1146 no such table, 1054 no such column) when a table or a column this version uses is
-- missing. The store then refuses to open and names `idem schema`, which prints schema.sql for
-- a DBA to run; records_key_width.sql and locks_name_width.sql then say whether the columns are
-- as wide as this version needs. Statements: 3. Reply: no rows.

SELECT scope, `key`, state, fence, fingerprint, lease_until, expires_at, result, recovered, owner FROM {p}records LIMIT 0;
SELECT scope, token, consumed, ttl_us, expires_at FROM {p}tokens LIMIT 0;
SELECT name, owner, fence, expires_at, unlocked FROM {p}locks LIMIT 0;
