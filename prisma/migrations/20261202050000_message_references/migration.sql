-- The six tables that point at messages (message_attempts, link_clicks, message_opens, sandbox_messages,
-- message_steps, broadcast_copies) keep their reference by triggers instead of foreign keys (docs/partitions.md,
-- "References to messages"). Postgres verifies every foreign key that points at a partitioned table when one of its
-- partitions is detached: a join of the whole referencing table with the partition, most of a month's retention DROP.
-- A trigger is not verified on detach, and holds what the keys held: a row naming a message that does not exist is
-- refused (23503, as a foreign key refuses it), and a message's rows go with it (as ON DELETE CASCADE took them).
-- Retention's DROP of a month of messages drops or deletes the month's rows of these tables first (partitions/).

-- On each referencing table (its column is message_id): the message must exist. Checked after the statement's rows are
-- written, as a foreign key's check is (broadcasts' insertCopies claims a copy's key and writes the copy in one
-- statement), and locked as that check locks it (FOR KEY SHARE): a delete of the message waits for this row's
-- transaction, and a delete already made wins.
CREATE FUNCTION message_reference() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM messages WHERE id = NEW.message_id FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'insert or update on table "%" violates the reference to messages: message % is not present', TG_TABLE_NAME, NEW.message_id
      USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, COLUMN = 'message_id';
  END IF;
  RETURN NULL;
END
$$;

-- On messages: a deleted message's rows go with it (row by row, as the cascade did; a dropped partition fires nothing:
-- retention removes those rows itself). Each table that has the trigger above is named here (test/partitions/references.test.ts).
CREATE FUNCTION message_references_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM message_attempts WHERE message_id = OLD.id;
  DELETE FROM link_clicks WHERE message_id = OLD.id;
  DELETE FROM message_opens WHERE message_id = OLD.id;
  DELETE FROM sandbox_messages WHERE message_id = OLD.id;
  DELETE FROM message_steps WHERE message_id = OLD.id;
  DELETE FROM broadcast_copies WHERE message_id = OLD.id;
  RETURN NULL;
END
$$;

ALTER TABLE "message_attempts" DROP CONSTRAINT "message_attempts_message_id_fkey";
ALTER TABLE "link_clicks" DROP CONSTRAINT "link_clicks_message_id_fkey";
ALTER TABLE "message_opens" DROP CONSTRAINT "message_opens_message_id_fkey";
ALTER TABLE "sandbox_messages" DROP CONSTRAINT "sandbox_messages_message_id_fkey";
ALTER TABLE "message_steps" DROP CONSTRAINT "message_steps_message_id_fkey";
ALTER TABLE "broadcast_copies" DROP CONSTRAINT "broadcast_copies_message_id_fkey";

CREATE TRIGGER "message_attempts_message_reference" AFTER INSERT OR UPDATE OF "message_id" ON "message_attempts" FOR EACH ROW EXECUTE FUNCTION message_reference();
CREATE TRIGGER "link_clicks_message_reference" AFTER INSERT OR UPDATE OF "message_id" ON "link_clicks" FOR EACH ROW EXECUTE FUNCTION message_reference();
CREATE TRIGGER "message_opens_message_reference" AFTER INSERT OR UPDATE OF "message_id" ON "message_opens" FOR EACH ROW EXECUTE FUNCTION message_reference();
CREATE TRIGGER "sandbox_messages_message_reference" AFTER INSERT OR UPDATE OF "message_id" ON "sandbox_messages" FOR EACH ROW EXECUTE FUNCTION message_reference();
CREATE TRIGGER "message_steps_message_reference" AFTER INSERT OR UPDATE OF "message_id" ON "message_steps" FOR EACH ROW EXECUTE FUNCTION message_reference();
CREATE TRIGGER "broadcast_copies_message_reference" AFTER INSERT OR UPDATE OF "message_id" ON "broadcast_copies" FOR EACH ROW EXECUTE FUNCTION message_reference();

CREATE TRIGGER "messages_references_delete" AFTER DELETE ON "messages" FOR EACH ROW EXECUTE FUNCTION message_references_delete();

-- Retention's check that a month of emails holds none finished after its line (`updated_at >= $1`) reads this BRIN
-- (a few pages a month; rows are written in time order) instead of the whole partition (partitions/repository.ts).
-- Autovacuum summarizes each full range of pages (autosummarize); retention summarizes what is left before its check.
CREATE INDEX "messages_updated_at_idx" ON "messages" USING BRIN ("updated_at") WITH (autosummarize = on);
