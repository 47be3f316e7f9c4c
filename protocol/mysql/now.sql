-- {now}: the server's clock in µs since the Unix epoch, constant within a statement and
-- independent of the session's time zone (UTC_TIMESTAMP(6)). Pasted in place of every {now}
-- (protocol/README.md).

TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))
