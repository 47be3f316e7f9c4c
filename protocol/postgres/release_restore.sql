-- release with restore_token. $1 scope bytea, $2 key bytea, $3 fence int8, $4 token bytea,
-- $5 ttl µs int8.
-- Reply: one row when released · none: fenced.
-- As release; the token ($4, for $5 µs) is re-armed in the same statement, only when the claim
-- went. Locks the record's row, then the token's: run it in a batch of its own.

WITH rel AS (
  UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = '',
         result = '', owner = ''
  WHERE scope = $1 AND key = $2 AND fence = $3 AND state = 'pending' AND expires_at > {now} RETURNING 1),
tok AS (
  UPDATE {p}tokens SET consumed = false, expires_at = {now} + $5
  WHERE scope = $1 AND token = $4 AND expires_at > {now} AND EXISTS (SELECT FROM rel) RETURNING 1)
SELECT 1 FROM rel
