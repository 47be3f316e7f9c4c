-- restore_token. $1 scope, $2 token, $3 ttl µs.
-- Statements: 1. Reply: rows found, 1 restored · 0 invalid.

UPDATE {p}tokens SET consumed = 0, expires_at = {now} + $3 WHERE scope = $1 AND token = $2 AND expires_at > {now};
