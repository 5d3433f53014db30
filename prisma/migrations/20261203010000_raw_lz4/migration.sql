-- The raw MIME a message arrives or is submitted with (the MX's, SMTP submission's, IMAP's, the sandbox's), and an
-- inbound attachment's bytes, compressed with lz4 instead of pglz. Most of such bytes are attachments: base64 of data
-- compressed already, which pglz reads to the end before it stores them as they were (a 14 MB message: 0.33 s of
-- Postgres CPU with pglz, 0.13 s with lz4, the write included). Set on each table and on every partition it has now;
-- the partitions housekeeping makes later take it from their table. A server built without lz4 keeps pglz.
DO $$
DECLARE
  target record;
  relation regclass;
BEGIN
  FOR target IN SELECT * FROM (VALUES ('sends', 'raw'), ('sandbox_messages', 'raw'), ('inbound_messages', 'raw'),
                                      ('inbound_attachments', 'content'), ('mx_messages', 'raw')) AS t(tbl, col) LOOP
    -- a plain table is no tree of its own: pg_partition_tree gives nothing for it
    FOR relation IN SELECT target.tbl::regclass UNION SELECT relid FROM pg_partition_tree(target.tbl::regclass) LOOP
      EXECUTE format('ALTER TABLE ONLY %s ALTER COLUMN %I SET COMPRESSION lz4', relation, target.col);
    END LOOP;
  END LOOP;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 is not supported by this server: the raw MIME columns keep pglz';
END $$;
