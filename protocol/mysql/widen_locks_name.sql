-- Widens {p}locks.name to 2369 bytes (an ALTER TABLE that rebuilds the table), under the
-- schema lock, after schema.sql, when locks_name_width.sql answers less.

ALTER TABLE {p}locks MODIFY name VARBINARY(2369) NOT NULL
