-- extend_lock. $1 name, $2 owner, $3 ttl µs.
-- Statements: 1. Reply: rows found, 1 extended · 0 not_owner.

UPDATE {p}locks SET expires_at = {now} + $3 WHERE name = $1 AND owner = $2 AND NOT unlocked AND expires_at > {now};
