-- The baseline: one INSERT … RETURNING (autocommit) of a row like a work commit's, on the client's own key.
\set n random(1, 9000000000000000)
INSERT INTO raw_commits (goal_key, cursor, provider_revision, operation_id, request_digest, events, receipt)
  VALUES ('r' || :client_id, :n, 'inc:' || :n, 'u-' || :n, repeat('d', 64),
          '[{"type":"todo_updated","todo_id":"t1","changes":{"title":"a title of ordinary length"},"todo_revision":2}]',
          '{"schema_version":"loopx_work_receipt_v0","operation_id":"op","result":"applied","todo_id":"t1","cursor":1}') RETURNING cursor;
