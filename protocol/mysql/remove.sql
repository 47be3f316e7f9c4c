-- remove (an operator's delete). $1 scope, $2 key.
-- Statements: 1. Reply: rows found, 1 when a live record went · 0.
-- An expired record is already absent and keeps its fence as it is.

UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = X'', result = X'', owner = X'' WHERE scope = $1 AND `key` = $2 AND state <> 'free' AND expires_at > {now};
