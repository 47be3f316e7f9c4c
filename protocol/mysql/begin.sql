-- begin. $1 scope, $2 key, $3 fingerprint, $4 lease µs, $5 retention µs, $6 owner.
-- Statements: 4. Reply: the fourth's one row (kind, fence, result, µs, previous fence):
-- 'a' acquired, 'r' recovered (fence, and the fence taken over), 'm' mismatch, 'd' replay
-- (fence, result, expires_in µs), 'i' in_progress (retry_after µs); 'x' (the lease ran out
-- between the UPDATE and the SELECT): run again.
-- 1. Makes sure the row exists and locks it: a missing row is inserted as a tombstone (state
--    'free', fence 0), an existing one is left as it is (ON DUPLICATE KEY UPDATE locks it).
-- 2. Keeps the row's fence in @idem_previous (a SET statement: MySQL 8 deprecates setting a
--    variable inside another statement), for a takeover to name.
-- 3. Takes the row when it is a tombstone, it expired, or its lease expired with a matching
--    fingerprint (both non-empty and different: a mismatch). One UPDATE at one NOW decides and
--    writes; it assigns left to right, each assignment seeing the columns assigned before it,
--    so `recovered` and `fingerprint` read the old state and expires_at.
-- 4. Reads the row the UPDATE left, locked since 1: ROW_COUNT() (rows found, the connection
--    sets CLIENT_FOUND_ROWS) is 1 when 3 took it.

INSERT INTO {p}records (scope, `key`, state, fence, fingerprint, lease_until, expires_at, result, recovered, owner)
VALUES ($1, $2, 'free', 0, X'', NULL, 0, X'', 0, X'')
ON DUPLICATE KEY UPDATE fence = fence;
SET @idem_previous = (SELECT fence FROM {p}records WHERE scope = $1 AND `key` = $2);
UPDATE {p}records
SET recovered = (state <> 'free' AND expires_at > {now}),
    fence = GREATEST(fence + 1, {now}),
    fingerprint = IF(state <> 'free' AND expires_at > {now} AND $3 = X'', fingerprint, $3),
    lease_until = {now} + $4, expires_at = {now} + $4 + $5, result = X'', owner = $6, state = 'pending'
WHERE scope = $1 AND `key` = $2
  AND (state = 'free' OR expires_at <= {now}
       OR (state = 'pending' AND lease_until <= {now}
           AND (fingerprint = X'' OR $3 = X'' OR fingerprint = $3)));
SELECT CASE WHEN ROW_COUNT() > 0 THEN IF(recovered, 'r', 'a')
            WHEN fingerprint <> X'' AND $3 <> X'' AND fingerprint <> $3 THEN 'm'
            WHEN state = 'done' THEN 'd'
            WHEN lease_until > {now} THEN 'i'
            ELSE 'x' END,
       fence, IF(state = 'done', result, NULL), IF(state = 'done', expires_at, lease_until) - {now},
       IF(ROW_COUNT() > 0 AND recovered, @idem_previous, 0)
FROM {p}records WHERE scope = $1 AND `key` = $2;
