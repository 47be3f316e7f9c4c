-- lock. $1 name, $2 owner, $3 ttl µs.
-- Statements: 2. Reply: the second's one row (kind, fence, NULL, retry_after µs): 'l' locked
-- with the fence, 'b' busy (retry_after µs), 'x': run again.
-- Takes the row when free, unlocked, expired or held by the same owner (then the fence stays),
-- with @idem_take as in begin.

INSERT INTO {p}locks (name, owner, fence, expires_at, unlocked)
VALUES ($1, $2, {now}, {now} + $3, (@idem_take := 1) - 1)
ON DUPLICATE KEY UPDATE
  fence = IF(@idem_take := (unlocked OR expires_at <= {now} OR owner = $2),
             IF(NOT unlocked AND expires_at > {now}, fence, GREATEST(fence + 1, {now})), fence),
  owner = IF(@idem_take, $2, owner),
  expires_at = IF(@idem_take, {now} + $3, expires_at),
  unlocked = IF(@idem_take, 0, unlocked);
SELECT IF(@idem_take, 'l', IF(NOT unlocked AND expires_at > {now} AND owner <> $2, 'b', 'x')), fence, NULL,
       expires_at - {now}
FROM {p}locks WHERE name = $1;
