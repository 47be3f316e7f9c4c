-- remove (an operator's delete). $1 scope bytea, $2 key bytea.
-- Reply: one row when a live record went · none.
-- An expired record is already absent and keeps its fence as it is.

UPDATE {p}records SET state = 'free', lease_until = NULL, expires_at = {now}, fingerprint = '', result = '', owner = '' WHERE scope = $1 AND key = $2 AND state <> 'free' AND expires_at > {now} RETURNING 1
