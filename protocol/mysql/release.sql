-- release. $1 scope, $2 key, $3 fence.
-- Statements: 1. Reply: rows found, 1 released · 0 fenced.
-- A live pending record with this fence becomes a tombstone (state 'free': absent for every
-- operation, keeps its fence; expires_at = NOW dates it for sweep).

UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = X'', result = X'', owner = X'' WHERE scope = $1 AND `key` = $2 AND fence = $3 AND state = 'pending' AND expires_at > {now};
