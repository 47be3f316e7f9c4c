-- The width in bytes of {p}locks.name. Tables created by an earlier version hold lock names of
-- 2,048 bytes: when this answers less than 2369, widen_locks_name.sql widens it. Reply: one row.

SELECT CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{p}locks' AND COLUMN_NAME = 'name'
