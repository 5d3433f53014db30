-- Three indexes of messages hold only the rows their readers look for (bench/README.md, "What is left": every email is
-- written three times, as queued, as sending and as sent, and each write that changes its status inserts an entry into
-- each index whose rows it belongs to).
-- (prospect_id, step) and (broadcast_id, subscriber_id): only a sequence email has a prospect and only a broadcast copy
-- a broadcast; every reader names one (prospect_id = ..., a join on it, or a foreign key's cascade), which a partial
-- index on IS NOT NULL serves.
DROP INDEX "messages_prospect_id_step_idx";
CREATE INDEX "messages_prospect_id_step_idx" ON "messages"("prospect_id", "step") WHERE "prospect_id" IS NOT NULL;
DROP INDEX "messages_broadcast_id_subscriber_id_idx";
CREATE INDEX "messages_broadcast_id_subscriber_id_idx" ON "messages"("broadcast_id", "subscriber_id") WHERE "broadcast_id" IS NOT NULL;
-- (status, not_before): the rows still on their way (message-status.ts OPEN_STATUSES_SQL), which the delivery's
-- counts, the metrics' live counts and the due scans read; a final status is searched through (status, created_at).
-- The "sent" mark then leaves this index alone.
-- Each CREATE reads every partition once while writes to messages wait (about 0.2 s a 2,000,000 rows in memory; a
-- year of mail read from disk takes seconds to tens of seconds): the service's own migration at start-up runs it.
DROP INDEX "messages_status_not_before_idx";
CREATE INDEX "messages_status_not_before_idx" ON "messages"("status", "not_before") WHERE "status" IN ('queued', 'sending', 'deferred');
