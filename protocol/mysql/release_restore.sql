-- release with restore_token. $1 scope, $2 key, $3 fence, $4 token, $5 ttl µs.
-- Statements: 3. Reply: the first's rows found, 1 released · 0 fenced.
-- As release; the token ($4, for $5 µs) is re-armed only when the claim went. Locks the
-- record's row, then the token's: run it in a batch of its own.

UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = X'', result = X'', owner = X'' WHERE scope = $1 AND `key` = $2 AND fence = $3 AND state = 'pending' AND expires_at > {now};
SET @idem_released = ROW_COUNT();
UPDATE {p}tokens SET consumed = 0, expires_at = {now} + $5
WHERE scope = $1 AND token = $4 AND expires_at > {now} AND @idem_released > 0;
