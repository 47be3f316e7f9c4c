-- unlock. $1 name bytea, $2 owner bytea.
-- Reply: one row when released · none: not_owner.
-- Unlocking marks the row unlocked (not held, whatever the clock says later) and keeps the
-- fence; expires_at = NOW dates it for sweep.

UPDATE {p}locks SET expires_at = {now}, unlocked = true WHERE name = $1 AND owner = $2 AND NOT unlocked AND expires_at > {now} RETURNING 1
