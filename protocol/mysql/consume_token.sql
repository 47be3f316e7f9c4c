-- consume_token. $1 scope, $2 token.
-- Statements: 1. Reply: rows found, 1 consumed · 0 invalid.
-- A consumed token stays restorable for another ttl.

UPDATE {p}tokens SET consumed = 1, expires_at = GREATEST(expires_at, {now} + ttl_us) WHERE scope = $1 AND token = $2 AND NOT consumed AND expires_at > {now};
