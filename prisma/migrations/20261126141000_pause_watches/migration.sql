-- Auto-pause windows short of their 20-email minimum that already hold a dead bounce or a complaint
-- (apps/core/src/outreach/auto-pause.ts): each email of theirs that ends is judged again, until the window is judged
-- for good. Usually empty.
CREATE TABLE "pause_watches" (
    "id" SERIAL NOT NULL,
    "campaign_id" INTEGER,
    "broadcast_id" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "pause_watches_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "pause_watches_one_owner_check" CHECK (("campaign_id" IS NULL) <> ("broadcast_id" IS NULL))
);

CREATE UNIQUE INDEX "pause_watches_campaign_id_key" ON "pause_watches"("campaign_id");

CREATE UNIQUE INDEX "pause_watches_broadcast_id_key" ON "pause_watches"("broadcast_id");

ALTER TABLE "pause_watches" ADD CONSTRAINT "pause_watches_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "pause_watches" ADD CONSTRAINT "pause_watches_broadcast_id_fkey" FOREIGN KEY ("broadcast_id") REFERENCES "broadcasts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
