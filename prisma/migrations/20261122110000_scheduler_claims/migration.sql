-- CreateIndex: the scheduler reads each running campaign's due prospects, oldest first (outreach/scheduler.ts)
CREATE INDEX "prospects_campaign_id_next_at_idx" ON "prospects"("campaign_id", "next_at");

-- AlterTable: when the scheduler queued the step due at next_at, so a backlog is not claimed again every tick
ALTER TABLE "prospects" ADD COLUMN "queued_at" TIMESTAMPTZ(3);
