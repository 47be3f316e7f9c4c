-- Widens {p}records.key to 320 bytes (an ALTER TABLE that rebuilds the table), under the
-- schema lock, after schema.sql, when records_key_width.sql answers less.

ALTER TABLE {p}records MODIFY `key` VARBINARY(320) NOT NULL
