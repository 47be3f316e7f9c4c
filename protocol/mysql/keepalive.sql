-- Said by a connection idle for 30 seconds, so that neither the server's wait_timeout nor a
-- middlebox ends it unseen. Reply: nothing.

DO 0
