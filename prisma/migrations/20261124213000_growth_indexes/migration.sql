-- CreateIndex: the message search by recipient (admin API, CLI, console), newest first, without scanning a year of rows
CREATE INDEX "messages_to_created_at_idx" ON "messages"("to", "created_at");

-- CreateIndex: the console's message list, newest first, and its keyset pages
CREATE INDEX "messages_created_at_idx" ON "messages"("created_at");

-- CreateIndex (partial, kept here only: schema.prisma cannot say it): the hourly retention task finds the finished
-- emails that still hold content without reading every finished email of the year (apps/core/src/retention.ts)
CREATE INDEX "messages_content_updated_at_idx" ON "messages"("updated_at") WHERE "text" IS NOT NULL OR "html" IS NOT NULL;

-- CreateIndex (partial): the same for Sends
CREATE INDEX "sends_content_created_at_idx" ON "sends"("created_at") WHERE "text" IS NOT NULL OR "html" IS NOT NULL OR "attachments" <> '[]'::jsonb;
