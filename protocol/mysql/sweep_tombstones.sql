-- sweep, step 2: tombstones {grace} after they went (their fence no longer matters: the
-- server's clock has passed it). Statements: 1. Reply: rows deleted, as sweep_records.

DELETE FROM {p}records WHERE expires_at <= {now} - {grace} AND state = 'free' LIMIT 1000;
