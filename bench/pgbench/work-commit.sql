-- One loopx_work_commit (admission, store-row lock, checks, insert, head update) on the client's own Goal,
-- the head it returns carried to the client's next call (-D started=0: the first call reads the head).
-- Every call should apply: afterwards, SELECT count(*) FROM work_commits is the transactions pgbench counted + 8.
\if :started = 0
\set started 1
SELECT i.store_identity AS admit_identity, i.restore_generation AS admit_generation, w.store_identity AS sid, w.incarnation AS inc,
       w.provider_revision AS rev
  FROM loopx_installation i, work_stores w WHERE w.goal_key = 'g' || (:client_id + 1) \gset
\endif
\set op random(1, 1000000000000)
SELECT outcome, head_revision AS rev FROM loopx_work_commit(:admit_identity, :admit_generation, 'g' || (:client_id + 1), :sid, :inc,
  'g' || (:client_id + 1), NULL, 0, 'op-' || :op, repeat('d', 64),
  '[{"type":"todo_updated","todo_id":"t1","changes":{"title":"a title of ordinary length"},"todo_revision":2}]',
  '{"schema_version":"loopx_work_receipt_v0","operation_id":"op","result":"applied","todo_id":"t1","cursor":1}',
  :rev, '{"todos":[{"id":"t1","title":"a title of ordinary length"}]}', NULL, 0) \gset
