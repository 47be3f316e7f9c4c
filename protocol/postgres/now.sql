-- {now}: the server's clock in µs since the Unix epoch, constant within a statement
-- (statement_timestamp()). Pasted in place of every {now} (protocol/README.md).

(extract(epoch FROM statement_timestamp()) * 1000000)::int8
