-- unlock. $1 name, $2 owner.
-- Statements: 1. Reply: rows found, 1 released · 0 not_owner.
-- Unlocking marks the row unlocked (not held, whatever the clock says later) and keeps the
-- fence; expires_at = NOW dates it for sweep.

UPDATE {p}locks SET expires_at = {now}, unlocked = 1 WHERE name = $1 AND owner = $2 AND NOT unlocked AND expires_at > {now};
