-- The MX's messages keep a raw MIME of up to about 8 KB in their row (toast_tuple_target 8160, the largest there is)
-- instead of the usual 2 KB. Most mail the MX takes is that small: DSNs, replies, notifications. Past 2 KB Postgres
-- first tries to compress the raw and, as base64 barely compresses, then moves it into the TOAST table: a second
-- heap insert and an index insert for every message, about 15% of Postgres's time in the mx bench. A row this size
-- still fits a page; a larger raw is compressed and moved out as before. The option is a partition's own (a
-- partitioned table has no storage), so it is set on every partition now and housekeeping makes the next ones with it
-- (PARTITIONED in apps/core/src/partitions/repository.ts).
DO $$
DECLARE
  relation regclass;
BEGIN
  FOR relation IN SELECT relid FROM pg_partition_tree('mx_messages'::regclass) WHERE isleaf LOOP
    EXECUTE format('ALTER TABLE %s SET (toast_tuple_target = 8160)', relation);
  END LOOP;
END $$;
