-- issue_token. $1 scope, $2 token, $3 ttl µs.
-- Statements: 1. Reply: rows affected, 1.

INSERT INTO {p}tokens (scope, token, consumed, ttl_us, expires_at) VALUES ($1, $2, 0, $3, {now} + $3);
