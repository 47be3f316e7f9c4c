-- Taken before schema.sql runs, so that several processes opening the store at once do not
-- collide. $1 the seconds to wait for it. Reply: one row, 1 when taken.

SELECT GET_LOCK('idem_schema_{p}', $1)
