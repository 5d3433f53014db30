-- Inbound emails read over IMAP (inbound_messages) partitioned by time as messages are (docs/partitions.md): by RANGE of
-- their id, which now carries its time. An id is a bigint: the Unix milliseconds of its making times 1,000, plus a
-- counter (the table's sequence, modulo 1,000), so ids stay integers the API answers as numbers (below 2^53 until the
-- year 2255), keep their order, and a lookup by id reads one partition. Ids made before (the serial's, all below the
-- first bound) stay as they were and sit in the default partition until retention deletes them.
--
-- The unique (mailbox_id, uid_validity, uid) does not hold the partition key: it moves to a small table of its own,
-- inbound_uids, claimed by claimInbound in the statement that writes the row (inbound/repository.ts), gone with it.
-- Rows copied in this migration's transaction (an offline copy, as the other partitioned tables': docs/partitions.md).

CREATE FUNCTION inbound_id() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint * 1000 + nextval('inbound_messages_id_seq') % 1000
$$;

ALTER TABLE "inbound_attachments" DROP CONSTRAINT "inbound_attachments_inbound_message_id_fkey";
ALTER TABLE "inbound_attachments" ALTER COLUMN "inbound_message_id" SET DATA TYPE BIGINT;

ALTER TABLE "inbound_messages" RENAME TO "inbound_messages_legacy";
ALTER TABLE "inbound_messages_legacy" RENAME CONSTRAINT "inbound_messages_pkey" TO "inbound_messages_legacy_pkey";
ALTER TABLE "inbound_messages_legacy" RENAME CONSTRAINT "inbound_messages_mailbox_id_fkey" TO "inbound_messages_legacy_mailbox_id_fkey";
ALTER INDEX "inbound_messages_mailbox_id_uid_validity_uid_key" RENAME TO "inbound_messages_legacy_uid_key";
ALTER INDEX "inbound_messages_mailbox_id_id_idx" RENAME TO "inbound_messages_legacy_mailbox_id_id_idx";

-- the partition key's type is set before the new table is made from the old one (it cannot change afterwards)
ALTER TABLE "inbound_messages_legacy" ALTER COLUMN "id" SET DATA TYPE BIGINT;
CREATE TABLE "inbound_messages" (LIKE "inbound_messages_legacy" INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS)
  PARTITION BY RANGE ("id");
ALTER SEQUENCE "inbound_messages_id_seq" OWNED BY "inbound_messages"."id";
ALTER TABLE "inbound_messages" ALTER COLUMN "id" SET DEFAULT inbound_id();
CREATE TABLE "inbound_messages_default" PARTITION OF "inbound_messages" DEFAULT;

-- the current month and three ahead (housekeeping makes the next ones, of PARTITION_INTERVAL)
DO $$
DECLARE
  m timestamptz := date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
BEGIN
  FOR i IN 0..3 LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF inbound_messages FOR VALUES FROM (%s) TO (%s)',
                   'inbound_messages_p' || to_char(m AT TIME ZONE 'UTC', 'YYYYMMDD'),
                   floor(extract(epoch FROM m) * 1000)::bigint * 1000,
                   floor(extract(epoch FROM (m AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC') * 1000)::bigint * 1000);
    m := (m AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC';
  END LOOP;
END
$$;

ALTER TABLE "inbound_messages" ADD CONSTRAINT "inbound_messages_pkey" PRIMARY KEY ("id");
CREATE INDEX "inbound_messages_mailbox_id_id_idx" ON "inbound_messages"("mailbox_id", "id");

CREATE TABLE "inbound_uids" (
    "mailbox_id" INTEGER NOT NULL,
    "uid_validity" BIGINT NOT NULL,
    "uid" BIGINT NOT NULL,
    "inbound_message_id" BIGINT NOT NULL,

    CONSTRAINT "inbound_uids_pkey" PRIMARY KEY ("mailbox_id","uid_validity","uid")
);
CREATE UNIQUE INDEX "inbound_uids_inbound_message_id_key" ON "inbound_uids"("inbound_message_id");

INSERT INTO "inbound_messages" SELECT * FROM "inbound_messages_legacy";
INSERT INTO "inbound_uids" ("mailbox_id", "uid_validity", "uid", "inbound_message_id")
  SELECT "mailbox_id", "uid_validity", "uid", "id" FROM "inbound_messages_legacy";
DROP TABLE "inbound_messages_legacy";

ALTER TABLE "inbound_messages" ADD CONSTRAINT "inbound_messages_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "inbound_attachments" ADD CONSTRAINT "inbound_attachments_inbound_message_id_fkey" FOREIGN KEY ("inbound_message_id") REFERENCES "inbound_messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "inbound_uids" ADD CONSTRAINT "inbound_uids_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "inbound_uids" ADD CONSTRAINT "inbound_uids_inbound_message_id_fkey" FOREIGN KEY ("inbound_message_id") REFERENCES "inbound_messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;
