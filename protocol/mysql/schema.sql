-- The tables, for MySQL >= 8.0 and MariaDB >= 10.6 with InnoDB (docs/design.md, "MySQL in
-- detail"). Three statements, run one after the other (each DDL statement commits by itself)
-- while holding schema_lock.sql's lock; safe to run again (IF NOT EXISTS). Then, for tables an
-- earlier version created, records_key_width.sql and locks_name_width.sql say whether
-- widen_records_key.sql and widen_locks_name.sql must run. `idem schema --store mysql://...`
-- prints them with the table prefix expanded.
-- Bytes as VARBINARY (PRIMARY KEY parts) compare bytewise, with no padding and no case
-- folding: "a", "a " and "A" are three keys. The widths are include/idem/limits.h's (scopes
-- 2,048, keys 320, lock names 2,369 bytes): a longer value is refused by the server (strict
-- mode). InnoDB keys hold 3,072 bytes at most: scope and key together take 2,368.
-- Times are BIGINT µs since the Unix epoch.

CREATE TABLE IF NOT EXISTS {p}records (
  scope       VARBINARY(2048) NOT NULL,
  `key`       VARBINARY(320) NOT NULL,
  state       VARCHAR(7) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,  -- pending, done, free (a tombstone)
  fence       BIGINT NOT NULL,
  fingerprint BLOB NOT NULL,
  lease_until BIGINT NULL,          -- µs since the Unix epoch; pending records only
  expires_at  BIGINT NOT NULL,      -- µs since the Unix epoch
  result      LONGBLOB NOT NULL,    -- done records only
  recovered   BOOLEAN NOT NULL,     -- the holder took over an expired lease
  owner       BLOB NOT NULL,        -- who claimed it (BeginArgs::owner)
  PRIMARY KEY (scope, `key`),
  KEY {p}records_expires_at (expires_at)
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS {p}tokens (
  scope      VARBINARY(2048) NOT NULL,
  token      VARBINARY(255) NOT NULL,
  consumed   BOOLEAN NOT NULL,
  ttl_us     BIGINT NOT NULL,       -- as issued
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (scope, token),
  KEY {p}tokens_expires_at (expires_at)
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS {p}locks (
  name       VARBINARY(2369) NOT NULL PRIMARY KEY,
  owner      BLOB NOT NULL,
  fence      BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,       -- unlocked: the instant of the unlock
  unlocked   BOOLEAN NOT NULL,      -- released by its owner: never held again
  KEY {p}locks_expires_at (expires_at)
) ENGINE = InnoDB;
