-- abandon. $1 scope bytea, $2 key bytea, $3 owner bytea (not empty).
-- Reply: one row when released · none: fenced.
-- As release, but the claim is named by its (non-empty) owner instead of its fence.

UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = '', result = '', owner = '' WHERE scope = $1 AND key = $2 AND state = 'pending' AND owner = $3 AND $3 <> '' AND expires_at > {now} RETURNING 1
