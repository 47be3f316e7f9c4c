-- The settings every connection starts with, sent once when it connects. $1 the seconds a
-- statement waits for a row lock (innodb_lock_wait_timeout: the store's op_timeout plus a
-- second or two).
-- Statements: 5. Reply: the last one's row, @@max_allowed_packet.
-- READ COMMITTED: InnoDB takes no gap locks, so the upserts of new keys and the updates of
-- missing rows in concurrent batches do not deadlock. Strict mode: a value too long for its
-- column is an error, never truncated.

SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION';SET SESSION autocommit = 1;SET SESSION innodb_lock_wait_timeout = $1;SELECT @@max_allowed_packet
