-- sweep, step 4: locks {grace} past their end. Statements: 1. Reply: rows deleted, as
-- sweep_records.

DELETE FROM {p}locks WHERE expires_at <= {now} - {grace} LIMIT 1000;
