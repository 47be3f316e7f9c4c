-- extend_lock. $1 name bytea, $2 owner bytea, $3 ttl µs int8.
-- Reply: one row when extended · none: not_owner.

UPDATE {p}locks SET expires_at = {now} + $3 WHERE name = $1 AND owner = $2 AND NOT unlocked AND expires_at > {now} RETURNING 1
