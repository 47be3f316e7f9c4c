-- consume_token. $1 scope bytea, $2 token bytea.
-- Reply: one row when consumed · none: invalid.
-- A consumed token stays restorable for another ttl.

UPDATE {p}tokens SET consumed = true, expires_at = greatest(expires_at, {now} + ttl_us) WHERE scope = $1 AND token = $2 AND NOT consumed AND expires_at > {now} RETURNING 1
