-- restore_token. $1 scope bytea, $2 token bytea, $3 ttl µs int8.
-- Reply: one row when restored · none: invalid.

UPDATE {p}tokens SET consumed = false, expires_at = {now} + $3 WHERE scope = $1 AND token = $2 AND expires_at > {now} RETURNING 1
