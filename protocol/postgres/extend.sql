-- extend. $1 scope bytea, $2 key bytea, $3 fence int8, $4 lease µs int8.
-- Reply: one row when extended · none: fenced.
-- expires_at keeps its distance to lease_until (the retention).

UPDATE {p}records SET lease_until = {now} + $4, expires_at = {now} + $4 + (expires_at - lease_until) WHERE scope = $1 AND key = $2 AND fence = $3 AND state = 'pending' AND expires_at > {now} RETURNING 1
