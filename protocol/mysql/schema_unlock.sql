-- Gives back schema_lock.sql's lock (closing the connection would too). Reply: one row.

SELECT RELEASE_LOCK('idem_schema_{p}')
