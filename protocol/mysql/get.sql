-- get. $1 scope, $2 key.
-- Statements: 1. Reply: no row (absent) or one row (scope, key, state, fence, fingerprint,
-- lease_until or NULL, expires_at, result, owner).

SELECT scope, `key`, state, fence, fingerprint, lease_until, expires_at, result, owner FROM {p}records WHERE scope = $1 AND `key` = $2 AND state <> 'free' AND expires_at > {now};
