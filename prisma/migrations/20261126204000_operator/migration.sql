-- CreateIndex: the console's message search by status, newest first, keyset-paged (apps/core/src/operator/search.ts)
CREATE INDEX "messages_status_created_at_idx" ON "messages"("status", "created_at");

-- CreateIndex (partial, kept here only: schema.prisma cannot say an expression index): the search by recipient
-- domain, newest first, keyset-paged
CREATE INDEX "messages_to_domain_idx" ON "messages"(split_part("to", '@', 2), "created_at" DESC, "id" DESC) WHERE "to" LIKE '%@%';

-- CreateIndex (partial, GIN): the search by subject words
CREATE INDEX "messages_subject_words_idx" ON "messages" USING GIN (to_tsvector('simple', "subject")) WHERE "subject" <> '';

-- CreateIndex (partial): a running broadcast's live view (copies, bounces per minute) reads only its latest changes
CREATE INDEX "messages_broadcast_updated_at_idx" ON "messages"("broadcast_id", "updated_at") WHERE "broadcast_id" IS NOT NULL;

-- CreateIndex (partial): a message's page finds its events
CREATE INDEX "events_message_idx" ON "events"((data->>'id')) WHERE "type" LIKE 'message.%';

-- CreateIndex: and the webhook deliveries of those events
CREATE INDEX "webhook_deliveries_event_id_idx" ON "webhook_deliveries"("event_id");

-- CreateIndex: a campaign's prospects, newest first, all or by status (apps/core/src/operator/prospects.ts)
CREATE INDEX "prospects_campaign_id_id_idx" ON "prospects"("campaign_id", "id");
CREATE INDEX "prospects_campaign_id_status_id_idx" ON "prospects"("campaign_id", "status", "id");

-- CreateIndex: opens per minute in a running broadcast's live view
CREATE INDEX "message_opens_first_at_idx" ON "message_opens"("first_at");
