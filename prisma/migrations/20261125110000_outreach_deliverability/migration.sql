-- AlterTable: sending windows, auto-pause and one-click opt-out of campaigns (docs/outreach.md)
ALTER TABLE "campaigns" ADD COLUMN "schedule" JSONB,
ADD COLUMN "pause_on" JSONB DEFAULT '{"bounce_rate": 0.05, "complaint_rate": 0.003, "window": 100}',
ADD COLUMN "paused_reason" TEXT,
ADD COLUMN "window_since" TIMESTAMPTZ(3),
ADD COLUMN "unsubscribe" BOOLEAN NOT NULL DEFAULT true;

-- AlterTable: jittered gaps and warm-up of mailboxes
ALTER TABLE "mailboxes" ADD COLUMN "gap_jitter" DOUBLE PRECISION NOT NULL DEFAULT 0.3,
ADD COLUMN "sequence_gap" DOUBLE PRECISION,
ADD COLUMN "warmup_start" INTEGER,
ADD COLUMN "warmup_step" INTEGER,
ADD COLUMN "warmup_since" TIMESTAMPTZ(3);

ALTER TABLE "mailboxes" ADD CONSTRAINT "mailboxes_gap_jitter_check" CHECK ("gap_jitter" >= 0 AND "gap_jitter" <= 1);
ALTER TABLE "mailboxes" ADD CONSTRAINT "mailboxes_warmup_check" CHECK ("warmup_start" IS NULL OR ("warmup_start" >= 0 AND "warmup_step" >= 0 AND "warmup_since" IS NOT NULL));

-- AlterTable: auto-pause of broadcasts
ALTER TABLE "broadcasts" ADD COLUMN "paused_reason" TEXT,
ADD COLUMN "window_since" TIMESTAMPTZ(3);
