-- commit. $1 scope bytea, $2 key bytea, $3 fence int8, $4 retention µs int8, $5 result bytea,
-- $6 over_uncertain bytea.
-- Reply: one row (kind text): 'c' committed (now, or before with this fence: a retried commit
-- changes nothing); 'f' or no row: fenced; 'x': the update met a row newer than the snapshot,
-- run again.
-- Takes a live pending record with this fence, or, when $6 is not empty, a live done record of
-- another fence whose result starts with $6 (the uncertain marker a takeover left for the claim
-- of fence $3: CommitArgs::over_uncertain), which then takes fence $3.

WITH up AS (
  UPDATE {p}records SET state = 'done', lease_until = NULL, expires_at = {now} + $4, result = $5,
         recovered = false, fence = $3
  WHERE scope = $1 AND key = $2 AND expires_at > {now}
    AND ((fence = $3 AND state = 'pending') OR ($6 <> '' AND state = 'done' AND fence <> $3 AND substr(result, 1, length($6)) = $6)) RETURNING 1)
SELECT 'c' FROM up
UNION ALL
SELECT CASE WHEN s.state = 'free' OR s.expires_at <= {now} THEN 'f'
            WHEN s.fence = $3 AND s.state = 'done' THEN 'c'
            WHEN s.fence = $3 THEN 'x'
            WHEN $6 <> '' AND s.state = 'done' AND s.fence <> $3 AND substr(s.result, 1, length($6)) = $6 THEN 'x'
            ELSE 'f' END
FROM {p}records s WHERE s.scope = $1 AND s.key = $2 AND NOT EXISTS (SELECT FROM up)
