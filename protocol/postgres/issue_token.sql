-- issue_token. $1 scope bytea, $2 token bytea, $3 ttl µs int8.
-- Reply: one row (token bytea).

INSERT INTO {p}tokens (scope, token, consumed, ttl_us, expires_at) VALUES ($1, $2, false, $3, {now} + $3) RETURNING token
