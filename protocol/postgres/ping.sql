-- ping. No parameters. Reply: one row.

SELECT 1
