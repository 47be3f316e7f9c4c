-- extend. $1 scope, $2 key, $3 fence, $4 lease µs.
-- Statements: 1. Reply: rows found, 1 extended · 0 fenced.
-- expires_at keeps its distance to lease_until (the retention), so it is assigned first: an
-- UPDATE assigns left to right, each assignment seeing the columns assigned before it.

UPDATE {p}records SET expires_at = {now} + $4 + (expires_at - lease_until), lease_until = {now} + $4 WHERE scope = $1 AND `key` = $2 AND fence = $3 AND state = 'pending' AND expires_at > {now};
