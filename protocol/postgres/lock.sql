-- lock. $1 name bytea, $2 owner bytea, $3 ttl µs int8.
-- Reply: one row (kind text, fence int8, retry_after µs int8), or none.
-- 'l' locked with the fence (free, unlocked or expired: a new fence; the owner again: the same
-- one), 'b' busy with retry_after µs, 'x' or no row: run again (as for begin).

WITH up AS (
  INSERT INTO {p}locks AS l (name, owner, fence, expires_at, unlocked) VALUES ($1, $2, {now}, {now} + $3, false)
  ON CONFLICT (name) DO UPDATE SET
    fence = CASE WHEN NOT l.unlocked AND l.expires_at > EXCLUDED.fence THEN l.fence
                 ELSE greatest(l.fence + 1, EXCLUDED.fence) END,
    owner = $2, expires_at = EXCLUDED.expires_at, unlocked = false
  WHERE l.unlocked OR l.expires_at <= EXCLUDED.fence OR l.owner = $2
  RETURNING fence)
SELECT 'l', fence, NULL::int8 FROM up
UNION ALL
SELECT CASE WHEN NOT s.unlocked AND s.expires_at > n.us AND s.owner <> $2 THEN 'b' ELSE 'x' END, NULL::int8,
       s.expires_at - n.us
FROM {p}locks s, (SELECT {now} AS us) n
WHERE s.name = $1 AND NOT EXISTS (SELECT FROM up)
