-- abandon. $1 scope, $2 key, $3 owner (not empty).
-- Statements: 1. Reply: rows found, 1 released · 0 fenced.
-- As release, but the claim is named by its (non-empty) owner instead of its fence.

UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = X'', result = X'', owner = X'' WHERE scope = $1 AND `key` = $2 AND state = 'pending' AND owner = $3 AND $3 <> X'' AND expires_at > {now};
