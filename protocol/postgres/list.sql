-- list. $1 flags int8, $2 scope bytea, $3 state text, $4 key_prefix bytea, $5 key_end bytea,
-- $6 after.expires_at int8, $7 after.scope bytea, $8 after.key bytea, $9 limit int8.
-- Reply: rows as get's, newest first (expires_at descending, then scope, key).
-- Live records; bytea compares bytewise, so a key prefix is the range [$4, $5). $1 says which
-- of the optional conditions apply: 1 scope = $2, 2 state = $3, 4 key < $5, 8 after the
-- position ($6, $7, $8): a page's cursor.

SELECT scope, key, state, fence, fingerprint, lease_until, expires_at, result, owner FROM {p}records
WHERE expires_at > {now} AND state <> 'free'
  AND (($1 & 1) = 0 OR scope = $2)
  AND (($1 & 2) = 0 OR state = $3)
  AND key >= $4 AND (($1 & 4) = 0 OR key < $5)
  AND (($1 & 8) = 0 OR expires_at < $6 OR (expires_at = $6 AND (scope, key) > ($7, $8)))
ORDER BY expires_at DESC, scope, key LIMIT $9
