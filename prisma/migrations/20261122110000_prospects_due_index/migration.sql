-- CreateIndex: the scheduler reads each running campaign's due prospects, oldest first (outreach/scheduler.ts)
CREATE INDEX "prospects_campaign_id_next_at_idx" ON "prospects"("campaign_id", "next_at");
