-- The largest statement the server takes, read once when the store opens: a result travels
-- hex-encoded in the commit statement, so a store holds results of up to
-- (max_allowed_packet - 16 KiB) / 2 bytes (docs/stores.md, "Sizes"). Reply: one row.

SELECT @@max_allowed_packet
