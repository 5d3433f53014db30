-- Sequences with branches and A/B variants (docs/outreach.md, DESIGN 30).
ALTER TABLE "campaign_steps" ADD COLUMN "key" TEXT;
UPDATE "campaign_steps" SET "key" = "position"::text;
ALTER TABLE "campaign_steps" ALTER COLUMN "key" SET NOT NULL;
ALTER TABLE "campaign_steps" ADD COLUMN "kind" TEXT NOT NULL DEFAULT 'email',
    ADD COLUMN "condition" JSONB,
    ADD COLUMN "next" TEXT,
    ADD COLUMN "variants" JSONB,
    ADD COLUMN "winner" JSONB,
    ADD COLUMN "chosen_variant" INTEGER,
    ADD CONSTRAINT "campaign_steps_kind_check" CHECK ("kind" IN ('email', 'condition'));

CREATE UNIQUE INDEX "campaign_steps_campaign_id_key_key" ON "campaign_steps"("campaign_id", "key");

ALTER TABLE "prospects" ADD COLUMN "node" TEXT,
    ADD COLUMN "node_since" TIMESTAMPTZ(3);

ALTER TABLE "messages" ADD COLUMN "step_key" TEXT,
    ADD COLUMN "variant" INTEGER;

-- A/B tests of broadcasts (docs/broadcasts.md)
ALTER TABLE "broadcasts" ADD COLUMN "variants" JSONB,
    ADD COLUMN "winner" JSONB,
    ADD COLUMN "test_share" DOUBLE PRECISION,
    ADD COLUMN "test_sent_at" TIMESTAMPTZ(3),
    ADD COLUMN "test_verdict" JSONB;
