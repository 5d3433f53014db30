-- CreateTable: the webhook deliveries still to be made, so that a retry Redis lost is rebuilt from Postgres
CREATE TABLE "webhook_jobs" (
    "event_id" UUID NOT NULL,
    "webhook_id" INTEGER NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "due_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_jobs_pkey" PRIMARY KEY ("event_id","webhook_id")
);

-- CreateIndex
CREATE INDEX "webhook_jobs_due_at_idx" ON "webhook_jobs"("due_at");

-- AddForeignKey
ALTER TABLE "webhook_jobs" ADD CONSTRAINT "webhook_jobs_event_id_fkey" FOREIGN KEY ("event_id") REFERENCES "events"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_jobs" ADD CONSTRAINT "webhook_jobs_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE CASCADE;
