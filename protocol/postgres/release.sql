-- release. $1 scope bytea, $2 key bytea, $3 fence int8.
-- Reply: one row when released · none: fenced.
-- A live pending record with this fence becomes a tombstone (state 'free': absent for every
-- operation, keeps its fence; expires_at = NOW dates it for sweep).

UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = '', result = '', owner = '' WHERE scope = $1 AND key = $2 AND fence = $3 AND state = 'pending' AND expires_at > {now} RETURNING 1
