-- sweep, step 3: expired tokens. Statements: 1. Reply: rows deleted, as sweep_records.

DELETE FROM {p}tokens WHERE expires_at <= {now} LIMIT 1000;
