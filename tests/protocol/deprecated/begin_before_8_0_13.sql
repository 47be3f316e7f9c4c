-- begin. $1 scope, $2 key, $3 fingerprint, $4 lease µs, $5 retention µs, $6 owner.
-- Statements: 2. Reply: the second's one row (kind, fence, result, µs, previous fence):
-- 'a' acquired, 'r' recovered (fence, and the fence taken over last), 'm' mismatch,
-- 'd' replay (fence, result, expires_in µs), 'i' in_progress (retry_after µs); 'x' (the lease
-- ran out between the two statements): run again.
-- Takes the row when there is none, it is a tombstone, it expired, or its lease expired with a
-- matching fingerprint. @idem_take says whether it did: the VALUES row, built for every call,
-- sets it to 1 (its `recovered` is (@idem_take := 1) - 1, that is 0) and @idem_previous to 0,
-- and on a conflict the first assignment sets @idem_take from the old row, the fence's keeps
-- the old fence in @idem_previous. NOW is the statement's, the same in every part. The SELECT
-- then reads the row the upsert left, locked by it.

INSERT INTO {p}records
  (scope, `key`, state, fence, fingerprint, lease_until, expires_at, result, recovered, owner)
VALUES ($1, $2, 'pending', {now}, $3, {now} + $4, {now} + $4 + $5, X'', (@idem_take := 1) - 1 + (@idem_previous := 0),
        $6)
ON DUPLICATE KEY UPDATE
  recovered = IF(@idem_take := (state = 'free' OR expires_at <= {now}
                                OR (state = 'pending' AND lease_until <= {now}
                                    AND (fingerprint = X'' OR $3 = X'' OR fingerprint = $3))),
                 state <> 'free' AND expires_at > {now}, recovered),
  fence = IF(@idem_take, GREATEST((@idem_previous := fence) + 1, {now}), fence),
  fingerprint = IF(@idem_take AND NOT (state <> 'free' AND expires_at > {now} AND $3 = X''), $3, fingerprint),
  lease_until = IF(@idem_take, {now} + $4, lease_until),
  expires_at = IF(@idem_take, {now} + $4 + $5, expires_at),
  result = IF(@idem_take, X'', result),
  owner = IF(@idem_take, $6, owner),
  state = IF(@idem_take, 'pending', state);
SELECT CASE WHEN @idem_take THEN IF(recovered, 'r', 'a')
            WHEN fingerprint <> X'' AND $3 <> X'' AND fingerprint <> $3 THEN 'm'
            WHEN state = 'done' THEN 'd'
            WHEN lease_until > {now} THEN 'i'
            ELSE 'x' END,
       fence, IF(state = 'done', result, NULL), IF(state = 'done', expires_at, lease_until) - {now},
       IF(@idem_take AND recovered, @idem_previous, 0)
FROM {p}records WHERE scope = $1 AND `key` = $2;
