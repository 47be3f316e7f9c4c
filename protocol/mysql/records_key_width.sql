-- The width in bytes of {p}records.key. Tables created by an earlier version hold keys of 255
-- bytes: when this answers less than 320, widen_records_key.sql widens it. Reply: one row.

SELECT CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{p}records' AND COLUMN_NAME = 'key'
