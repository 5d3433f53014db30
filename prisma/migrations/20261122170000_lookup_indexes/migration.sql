-- CreateIndex: the scheduler counts what it queued in the last minute by reading only those rows (outreach/scheduler.ts)
CREATE INDEX "prospects_queued_at_idx" ON "prospects"("queued_at");

-- CreateIndex: and finds the open prospects past their last step without reading their campaign's whole due backlog
CREATE INDEX "prospects_campaign_id_status_step_idx" ON "prospects"("campaign_id", "status", "step");

-- CreateIndex: "bounced or complained on any list of the account" (the suppression rule of every add) looks an
-- address up by itself, not once per list of the account
CREATE INDEX "subscribers_email_idx" ON "subscribers"("email");
