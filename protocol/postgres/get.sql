-- get. $1 scope bytea, $2 key bytea.
-- Reply: no row (absent) or one row (scope bytea, key bytea, state text, fence int8,
-- fingerprint bytea, lease_until int8 or NULL, expires_at int8, result bytea, owner bytea).

SELECT scope, key, state, fence, fingerprint, lease_until, expires_at, result, owner FROM {p}records WHERE scope = $1 AND key = $2 AND state <> 'free' AND expires_at > {now}
