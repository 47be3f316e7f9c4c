-- ping. Statements: 1. Reply: one row.

SELECT 1;
