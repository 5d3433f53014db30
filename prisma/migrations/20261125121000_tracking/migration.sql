-- AlterTable: opt-in click tracking per campaign (its emails are text: no opens) and click and open tracking per broadcast
ALTER TABLE "campaigns" ADD COLUMN     "track_clicks" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "broadcasts" ADD COLUMN     "track_clicks" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "track_opens" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "link_clicks" (
    "id" BIGSERIAL NOT NULL,
    "message_id" UUID NOT NULL,
    "account_id" INTEGER NOT NULL,
    "broadcast_id" INTEGER,
    "url" TEXT NOT NULL,
    "scanner" BOOLEAN NOT NULL DEFAULT false,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "link_clicks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "message_opens" (
    "message_id" UUID NOT NULL,
    "account_id" INTEGER NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 1,
    "first_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "message_opens_pkey" PRIMARY KEY ("message_id")
);

-- CreateIndex
CREATE INDEX "link_clicks_message_id_idx" ON "link_clicks"("message_id");

-- CreateIndex
CREATE INDEX "link_clicks_broadcast_id_url_idx" ON "link_clicks"("broadcast_id", "url");

-- AddForeignKey
ALTER TABLE "link_clicks" ADD CONSTRAINT "link_clicks_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message_opens" ADD CONSTRAINT "message_opens_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;
