-- Time partitions (DESIGN section 25, docs/partitions.md): messages, message_attempts and events are partitioned by
-- RANGE of their time-ordered UUIDv7 id (message_attempts by its message's id), monthly here; housekeeping makes the
-- next ones (PARTITION_INTERVAL) and a DEFAULT partition catches any row no range holds (an id made before ids carried
-- their time). The partition key is the id itself, so the primary keys stay (id), a lookup by id reads one partition,
-- and the foreign keys that point at messages(id) and events(id) keep working unchanged.
--
-- The tables are rebuilt from the catalog, not from a fixed column list: a column, CHECK or index another migration
-- added to them is carried over. Rows are copied in this migration's transaction (an offline copy: docs/partitions.md).

-- A UUIDv7 made in the database (events' ids): 48 bits of Unix milliseconds, then random bits, version 7.
CREATE FUNCTION uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
           PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
         52, 1), 53, 1), 'hex')::uuid
$$;

-- The smallest UUIDv7 of an instant: a partition's bound.
CREATE FUNCTION uuid_v7_floor(t timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid
$$;

-- Uniqueness that spanned messages now lives in small tables of its own (a unique index of a partitioned table must
-- hold its partition key): one step of a prospect, one copy of a broadcast per subscriber.
CREATE TABLE "message_steps" (
    "prospect_id" INTEGER NOT NULL,
    "step" INTEGER NOT NULL,
    "message_id" UUID NOT NULL,

    CONSTRAINT "message_steps_pkey" PRIMARY KEY ("prospect_id","step")
);
CREATE UNIQUE INDEX "message_steps_message_id_key" ON "message_steps"("message_id");

CREATE TABLE "broadcast_copies" (
    "broadcast_id" INTEGER NOT NULL,
    "subscriber_id" INTEGER NOT NULL,
    "message_id" UUID NOT NULL,

    CONSTRAINT "broadcast_copies_pkey" PRIMARY KEY ("broadcast_id","subscriber_id")
);
CREATE UNIQUE INDEX "broadcast_copies_message_id_key" ON "broadcast_copies"("message_id");

CREATE FUNCTION pg_temp.repartition(tbl text, keycol text) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  legacy text := tbl || '_legacy';
  r record;
  inbound text[] := '{}';
  outbound text[] := '{}';
  indexes text[] := '{}';
  cols text;
  first_ms bigint;
  m timestamptz;
BEGIN
  -- foreign keys that point at the table: dropped now, made again against the new one at the end
  FOR r IN SELECT c.conname, c.conrelid::regclass::text AS rel, pg_get_constraintdef(c.oid) AS def
             FROM pg_constraint c WHERE c.confrelid = tbl::regclass AND c.contype = 'f' AND c.conparentid = 0 LOOP
    inbound := inbound || format('ALTER TABLE %s ADD CONSTRAINT %I %s', r.rel, r.conname, r.def);
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.rel, r.conname);
  END LOOP;
  -- its own foreign keys, made again on the new table (not the copies Postgres made for each partition of a
  -- partitioned table they point at: those it makes again itself)
  FOR r IN SELECT c.conname, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
            WHERE c.conrelid = tbl::regclass AND c.contype = 'f' AND c.conparentid = 0 LOOP
    outbound := outbound || format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, r.conname, r.def);
  END LOOP;
  -- its indexes (primary key and unique constraints included), by their names, on the new table
  FOR r IN SELECT i.relname AS name, x.indisprimary AS "primary", x.indisunique AS "unique", con.conname,
                  pg_get_indexdef(x.indexrelid) AS def,
                  array(SELECT a.attname::text FROM unnest(x.indkey) WITH ORDINALITY k(n, o) JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n ORDER BY k.o) AS columns
             FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
             LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid AND con.conrelid = x.indrelid
            WHERE x.indrelid = tbl::regclass LOOP
    IF r."unique" AND NOT (keycol = ANY (r.columns)) THEN
      -- the two that moved to message_steps and broadcast_copies become plain indexes (their lookups stay)
      IF tbl = 'messages' AND r.columns IN (ARRAY['prospect_id', 'step'], ARRAY['broadcast_id', 'subscriber_id']) THEN
        indexes := indexes || format('CREATE INDEX %I ON %I (%s)', tbl || '_' || array_to_string(r.columns, '_') || '_idx', tbl,
                                     (SELECT string_agg(quote_ident(c), ', ') FROM unnest(r.columns) c));
      ELSE
        RAISE EXCEPTION 'unique index % of % does not hold the partition key %: give it a table of its own', r.name, tbl, keycol;
      END IF;
    ELSIF r.conname IS NOT NULL THEN
      indexes := indexes || format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, r.conname,
                                   (SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c WHERE c.conname = r.conname AND c.conrelid = tbl::regclass));
    ELSE
      -- its definition names the table, which by then is the new one of the same name
      indexes := indexes || r.def;
    END IF;
    IF r.conname IS NOT NULL THEN
      EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', tbl, r.conname, left(r.conname, 50) || '_legacy');
    ELSE
      EXECUTE format('ALTER INDEX %I RENAME TO %I', r.name, left(r.name, 50) || '_legacy');
    END IF;
  END LOOP;
  EXECUTE format('ALTER TABLE %I RENAME TO %I', tbl, legacy);
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMMENTS) PARTITION BY RANGE (%I)',
                 tbl, legacy, keycol);
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', tbl || '_default', tbl);
  -- a partition a month from the month of the oldest time-carrying id (the others go to the default) to three ahead
  EXECUTE format('SELECT (''x'' || substr(replace(%1$I::text, ''-'', ''''), 1, 12))::bit(48)::bigint FROM %2$I
                    WHERE substr(%1$I::text, 15, 1) = ''7'' AND %1$I < uuid_v7_floor(now() + interval ''1 year'') ORDER BY %1$I LIMIT 1', keycol, legacy)
    INTO first_ms;
  m := date_trunc('month', least(now(), coalesce(to_timestamp(first_ms / 1000.0), now())) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  WHILE m < date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '4 months' LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', tbl || '_p' || to_char(m AT TIME ZONE 'UTC', 'YYYYMMDD'), tbl,
                   uuid_v7_floor(m), uuid_v7_floor((m AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC'));
    m := (m AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC';
  END LOOP;
  FOREACH cols IN ARRAY indexes LOOP EXECUTE cols; END LOOP;
  FOREACH cols IN ARRAY outbound LOOP EXECUTE cols; END LOOP;
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
    FROM pg_attribute a WHERE a.attrelid = legacy::regclass AND a.attnum > 0 AND NOT a.attisdropped;
  EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM %I', tbl, cols, cols, legacy);
  EXECUTE format('DROP TABLE %I', legacy);
  FOREACH cols IN ARRAY inbound LOOP EXECUTE cols; END LOOP;
END
$fn$;

-- the keys of the rows already there, before messages loses its unique indexes
INSERT INTO "message_steps" ("prospect_id", "step", "message_id")
  SELECT "prospect_id", "step", "id" FROM "messages" WHERE "prospect_id" IS NOT NULL AND "step" IS NOT NULL;
INSERT INTO "broadcast_copies" ("broadcast_id", "subscriber_id", "message_id")
  SELECT "broadcast_id", "subscriber_id", "id" FROM "messages" WHERE "broadcast_id" IS NOT NULL AND "subscriber_id" IS NOT NULL;

SELECT pg_temp.repartition('messages', 'id');
SELECT pg_temp.repartition('message_attempts', 'message_id');
SELECT pg_temp.repartition('events', 'id');

ALTER TABLE "events" ALTER COLUMN "id" SET DEFAULT uuid_v7();

-- A message with a prospect's step or a broadcast's subscriber claims its key; a second message for the same key fails
-- as the unique index did (23505). A key already claimed by this very message (broadcasts/repository.ts insertCopies
-- claims first, to skip copies already written) is left alone.
CREATE FUNCTION message_claim_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.prospect_id IS NOT NULL AND NEW.step IS NOT NULL THEN
    PERFORM 1 FROM message_steps WHERE prospect_id = NEW.prospect_id AND step = NEW.step AND message_id = NEW.id;
    IF NOT FOUND THEN INSERT INTO message_steps (prospect_id, step, message_id) VALUES (NEW.prospect_id, NEW.step, NEW.id); END IF;
  END IF;
  IF NEW.broadcast_id IS NOT NULL AND NEW.subscriber_id IS NOT NULL THEN
    PERFORM 1 FROM broadcast_copies WHERE broadcast_id = NEW.broadcast_id AND subscriber_id = NEW.subscriber_id AND message_id = NEW.id;
    IF NOT FOUND THEN INSERT INTO broadcast_copies (broadcast_id, subscriber_id, message_id) VALUES (NEW.broadcast_id, NEW.subscriber_id, NEW.id); END IF;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER "messages_claim_keys" AFTER INSERT ON "messages" FOR EACH ROW
  WHEN (NEW.prospect_id IS NOT NULL OR NEW.broadcast_id IS NOT NULL) EXECUTE FUNCTION message_claim_keys();

ALTER TABLE "message_steps" ADD CONSTRAINT "message_steps_prospect_id_fkey" FOREIGN KEY ("prospect_id") REFERENCES "prospects"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "message_steps" ADD CONSTRAINT "message_steps_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "broadcast_copies" ADD CONSTRAINT "broadcast_copies_broadcast_id_fkey" FOREIGN KEY ("broadcast_id") REFERENCES "broadcasts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "broadcast_copies" ADD CONSTRAINT "broadcast_copies_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;
