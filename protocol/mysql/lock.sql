-- lock. $1 name, $2 owner, $3 ttl µs.
-- Statements: 3. Reply: the third's one row (kind, fence, NULL, retry_after µs): 'l' locked
-- with the fence, 'b' busy (retry_after µs), 'x' (the lock ran out between the UPDATE and the
-- SELECT): run again.
-- As begin: 1. makes sure the row exists (a missing one is inserted unlocked, fence 0) and
-- locks it; 2. takes it when unlocked, expired or held by the same owner (then the fence
-- stays; otherwise a new one); 3. reads it: ROW_COUNT() is 1 when 2 took it.

INSERT INTO {p}locks (name, owner, fence, expires_at, unlocked) VALUES ($1, X'', 0, 0, 1)
ON DUPLICATE KEY UPDATE fence = fence;
UPDATE {p}locks
SET fence = IF(NOT unlocked AND expires_at > {now}, fence, GREATEST(fence + 1, {now})),
    owner = $2, expires_at = {now} + $3, unlocked = 0
WHERE name = $1 AND (unlocked OR expires_at <= {now} OR owner = $2);
SELECT IF(ROW_COUNT() > 0, 'l', IF(NOT unlocked AND expires_at > {now} AND owner <> $2, 'b', 'x')), fence, NULL,
       expires_at - {now}
FROM {p}locks WHERE name = $1;
