-- commit. $1 scope, $2 key, $3 fence, $4 retention µs, $5 result, $6 over_uncertain,
-- $7 the length of over_uncertain in bytes.
-- Statements: 2. Reply: the second's one row (kind): 'c' when the UPDATE found the row
-- (ROW_COUNT(): rows found), or when the row is done with this fence and live (a retried
-- commit changes nothing); else 'f', fenced (NULL, no row: fenced too).
-- The UPDATE takes a live pending row of this fence or, when $7 is not 0, a live done row of
-- another fence whose result starts with $6 (CommitArgs::over_uncertain), which takes this
-- fence.

UPDATE {p}records
SET state = 'done', lease_until = NULL, expires_at = {now} + $4, result = $5, recovered = 0, fence = $3
WHERE scope = $1 AND `key` = $2 AND expires_at > {now}
  AND ((state = 'pending' AND fence = $3)
       OR ($7 > 0 AND state = 'done' AND fence <> $3 AND LEFT(result, $7) = $6));
SELECT IF(ROW_COUNT() > 0, 'c',
          (SELECT IF(state = 'done' AND fence = $3 AND expires_at > {now}, 'c', 'f') FROM {p}records
           WHERE scope = $1 AND `key` = $2));
