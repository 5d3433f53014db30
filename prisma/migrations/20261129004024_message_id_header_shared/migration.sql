-- The copies of a message submitted over SMTP are stored with the Message-ID the message carries (the client's, or
-- the one put in), so several copies, and clients of different keys, may share one: a plain index serves the lookups
-- of reports and replies (always with the mailbox), uniqueness no longer holds.
DROP INDEX "messages_message_id_header_key";

CREATE INDEX "messages_message_id_header_idx" ON "messages"("message_id_header");
