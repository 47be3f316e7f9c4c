-- begin. $1 scope bytea, $2 key bytea, $3 fingerprint bytea, $4 lease µs int8,
-- $5 retention µs int8, $6 owner bytea.
-- Reply: one row (kind text, fence int8, result bytea, µs int8, previous_fence int8), or none.
-- One upsert that acquires (fresh, or taking over an expired lease) and returns kind 'a' or 'r'
-- (recovered) with the fence and, for 'r', the fence it took over (the SET reads the old row:
-- previous_fence); otherwise it changes nothing but locks the row, and the second branch
-- reports what the statement's snapshot shows: 'm' mismatch, 'd' replay (fence, result,
-- expires_in µs), 'i' in_progress (retry_after µs). 'x' or no row at all: the row the upsert
-- met was written after the snapshot was taken; the caller runs the statement again.
-- EXCLUDED.fence is NOW (a fresh row's fence).

WITH up AS (
  INSERT INTO {p}records AS r (scope, key, state, fence, fingerprint, lease_until, expires_at, result, recovered,
                               owner, previous_fence)
  VALUES ($1, $2, 'pending', {now}, $3, {now} + $4, {now} + $4 + $5, '', false, $6, 0)
  ON CONFLICT (scope, key) DO UPDATE SET
    fence = greatest(r.fence + 1, EXCLUDED.fence),
    recovered = r.state <> 'free' AND r.expires_at > EXCLUDED.fence,
    previous_fence = CASE WHEN r.state <> 'free' AND r.expires_at > EXCLUDED.fence THEN r.fence ELSE 0 END,
    fingerprint = CASE WHEN r.state <> 'free' AND r.expires_at > EXCLUDED.fence AND $3 = '' THEN r.fingerprint
                       ELSE $3 END,
    state = 'pending', lease_until = EXCLUDED.lease_until, expires_at = EXCLUDED.expires_at, result = '',
    owner = $6
  WHERE r.state = 'free' OR r.expires_at <= EXCLUDED.fence
     OR (r.state = 'pending' AND r.lease_until <= EXCLUDED.fence
         AND (r.fingerprint = '' OR $3 = '' OR r.fingerprint = $3))
  RETURNING fence, recovered, previous_fence)
SELECT CASE WHEN recovered THEN 'r' ELSE 'a' END, fence, NULL::bytea, NULL::int8, previous_fence FROM up
UNION ALL
SELECT CASE WHEN s.state = 'free' OR s.expires_at <= n.us THEN 'x'
            WHEN s.fingerprint <> '' AND $3 <> '' AND s.fingerprint <> $3 THEN 'm'
            WHEN s.state = 'done' THEN 'd'
            WHEN s.lease_until > n.us THEN 'i'
            ELSE 'x' END,
       s.fence, CASE WHEN s.state = 'done' THEN s.result END,
       CASE WHEN s.state = 'done' THEN s.expires_at ELSE s.lease_until END - n.us, NULL::int8
FROM {p}records s, (SELECT {now} AS us) n
WHERE s.scope = $1 AND s.key = $2 AND NOT EXISTS (SELECT FROM up)
