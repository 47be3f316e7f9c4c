-- The tables, for PostgreSQL >= 14 (docs/design.md, "PostgreSQL in detail"). Run as one
-- script (simple query protocol: several statements); it is its own transaction, serialized by
-- an advisory lock, so that several processes opening the store at once do not collide, and
-- safe to run again (IF NOT EXISTS). Columns added since a table was first created are added in
-- place. `idem schema --store postgres://...` prints it with the table prefix expanded.
-- Keys, scopes, fingerprints, owners and results are bytea; times are int8 µs since the Unix
-- epoch.

BEGIN;
SET LOCAL client_min_messages = warning;  -- no "already exists, skipping" notices
SELECT pg_advisory_xact_lock(hashtext('idem schema {p}'));
CREATE TABLE IF NOT EXISTS {p}records (
  scope       bytea NOT NULL,
  key         bytea NOT NULL,
  state       text NOT NULL CHECK (state IN ('pending', 'done', 'free')),  -- free: a tombstone
  fence       int8 NOT NULL,
  fingerprint bytea NOT NULL,
  lease_until int8,              -- µs since the Unix epoch; pending records only
  expires_at  int8 NOT NULL,     -- µs since the Unix epoch
  result      bytea NOT NULL,    -- done records only
  recovered   boolean NOT NULL,  -- the holder took over an expired lease
  owner       bytea NOT NULL DEFAULT '',  -- who claimed it (BeginArgs::owner)
  previous_fence int8 NOT NULL DEFAULT 0,  -- recovered: the fence of the claim taken over
  PRIMARY KEY (scope, key)
);
-- Tables created before records had an owner or a previous fence get the columns in place.
ALTER TABLE {p}records ADD COLUMN IF NOT EXISTS owner bytea NOT NULL DEFAULT '',
                       ADD COLUMN IF NOT EXISTS previous_fence int8 NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS {p}records_expires_at ON {p}records (expires_at);
CREATE TABLE IF NOT EXISTS {p}tokens (
  scope      bytea NOT NULL,
  token      bytea NOT NULL,
  consumed   boolean NOT NULL,
  ttl_us     int8 NOT NULL,      -- as issued
  expires_at int8 NOT NULL,
  PRIMARY KEY (scope, token)
);
CREATE INDEX IF NOT EXISTS {p}tokens_expires_at ON {p}tokens (expires_at);
CREATE TABLE IF NOT EXISTS {p}locks (
  name       bytea NOT NULL PRIMARY KEY,
  owner      bytea NOT NULL,
  fence      int8 NOT NULL,
  expires_at int8 NOT NULL,      -- unlocked: the instant of the unlock
  unlocked   boolean NOT NULL DEFAULT false  -- released by its owner: never held again
);
ALTER TABLE {p}locks ADD COLUMN IF NOT EXISTS unlocked boolean NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS {p}locks_expires_at ON {p}locks (expires_at);
COMMIT;
