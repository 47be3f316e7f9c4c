-- Sent once when a connection is set up, before the statements are prepared. $1 text: the
-- server's statement_timeout, a little longer than the store's op_timeout ('6000ms'), so that
-- the server gives up on a statement a little after the store did and nothing it holds stays
-- stuck behind a connection the store abandoned. Reply: one row.

SELECT set_config('statement_timeout', $1, false)
