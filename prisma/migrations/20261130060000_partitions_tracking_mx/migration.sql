-- Time partitions for the tracking tables and the MX's messages (docs/partitions.md): link_clicks and message_opens
-- by RANGE of their email's id (message_id, a UUIDv7), mx_messages by RANGE of its own UUIDv7 id, each on the same
-- bounds as messages' partitions, with a DEFAULT partition for ids no range holds. Housekeeping makes the next ones.
--
-- A primary key of a partitioned table must hold the partition key: link_clicks' becomes (message_id, id). Its unique
-- (message_id, url, scanner) and message_opens' key (message_id) already hold it. Nothing points at these tables.
-- Built from the catalog (a column or index another migration added is carried over); rows copied in this transaction.

CREATE FUNCTION pg_temp.partition_like_messages(tbl text, keycol text) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  legacy text := tbl || '_legacy';
  r record;
  redo text[] := '{}';
  cols text;
BEGIN
  FOR r IN SELECT con.conname, con.contype, pg_get_constraintdef(con.oid) AS def,
                  array(SELECT a.attname::text FROM unnest(con.conkey) k(n) JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n) AS columns
             FROM pg_constraint con WHERE con.conrelid = tbl::regclass AND con.contype IN ('p', 'u', 'f') AND con.conparentid = 0 LOOP
    IF r.contype = 'p' AND NOT (keycol = ANY (r.columns)) THEN
      redo := redo || format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (%I, %s)', tbl, r.conname, keycol,
                             (SELECT string_agg(quote_ident(c), ', ') FROM unnest(r.columns) c));
    ELSIF r.contype = 'u' AND NOT (keycol = ANY (r.columns)) THEN
      RAISE EXCEPTION 'unique constraint % of % does not hold the partition key %: give it a table of its own', r.conname, tbl, keycol;
    ELSE
      redo := redo || format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, r.conname, r.def);
    END IF;
    EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', tbl, r.conname, left(r.conname, 50) || '_legacy');
  END LOOP;
  -- the indexes that are not constraints', made again by their definitions (which name the new table by then)
  FOR r IN SELECT i.relname AS name, x.indisunique AS "unique", pg_get_indexdef(x.indexrelid) AS def,
                  array(SELECT a.attname::text FROM unnest(x.indkey) k(n) JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n) AS columns
             FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
            WHERE x.indrelid = tbl::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) LOOP
    IF r."unique" AND NOT (keycol = ANY (r.columns)) THEN
      RAISE EXCEPTION 'unique index % of % does not hold the partition key %: give it a table of its own', r.name, tbl, keycol;
    END IF;
    redo := array_prepend(r.def, redo);
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.name, left(r.name, 50) || '_legacy');
  END LOOP;
  EXECUTE format('ALTER TABLE %I RENAME TO %I', tbl, legacy);
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMMENTS) PARTITION BY RANGE (%I)',
                 tbl, legacy, keycol);
  -- a serial column's sequence goes to the new table (dropping the old one would take it along)
  FOR r IN SELECT a.attname, pg_get_serial_sequence(legacy, a.attname) AS seq FROM pg_attribute a
            WHERE a.attrelid = legacy::regclass AND a.attnum > 0 AND NOT a.attisdropped AND pg_get_serial_sequence(legacy, a.attname) IS NOT NULL LOOP
    EXECUTE format('ALTER SEQUENCE %s OWNED BY %I.%I', r.seq, tbl, r.attname);
  END LOOP;
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', tbl || '_default', tbl);
  -- the bounds of messages' partitions, so that an email's clicks and opens sit in the month the email sits in
  FOR r IN SELECT replace(c.relname, 'messages_', tbl || '_') AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'messages'::regclass AND c.relname <> 'messages_default' LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I %s', r.name, tbl, r.bound);
  END LOOP;
  FOREACH cols IN ARRAY redo LOOP EXECUTE cols; END LOOP;
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
    FROM pg_attribute a WHERE a.attrelid = legacy::regclass AND a.attnum > 0 AND NOT a.attisdropped;
  EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM %I', tbl, cols, cols, legacy);
  EXECUTE format('DROP TABLE %I', legacy);
END
$fn$;

SELECT pg_temp.partition_like_messages('link_clicks', 'message_id');
SELECT pg_temp.partition_like_messages('message_opens', 'message_id');
SELECT pg_temp.partition_like_messages('mx_messages', 'id');
