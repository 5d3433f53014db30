-- Mailbox rotation (docs/campaigns.md): a campaign may send from several mailboxes, each prospect from the one its
-- first step went out from.
CREATE TABLE "campaign_mailboxes" (
    "campaign_id" INTEGER NOT NULL,
    "mailbox_id" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "active" BOOLEAN NOT NULL DEFAULT true,

    CONSTRAINT "campaign_mailboxes_pkey" PRIMARY KEY ("campaign_id","mailbox_id")
);

-- CreateIndex
CREATE INDEX "campaign_mailboxes_mailbox_id_idx" ON "campaign_mailboxes"("mailbox_id");

-- AddForeignKey
ALTER TABLE "campaign_mailboxes" ADD CONSTRAINT "campaign_mailboxes_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "campaign_mailboxes" ADD CONSTRAINT "campaign_mailboxes_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- a mailbox taken out of a running campaign stays as inactive: no new first steps, its prospects finish from it
-- every campaign names its one mailbox in the list too
INSERT INTO "campaign_mailboxes" ("campaign_id", "mailbox_id", "position") SELECT "id", "mailbox_id", 1 FROM "campaigns";

-- AlterTable: the mailbox a prospect's first step went out from (its later steps follow it)
ALTER TABLE "prospects" ADD COLUMN "mailbox_id" INTEGER;
ALTER TABLE "prospects" ADD CONSTRAINT "prospects_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE SET NULL ON UPDATE CASCADE;
UPDATE "prospects" p SET "mailbox_id" = c."mailbox_id" FROM "campaigns" c WHERE c."id" = p."campaign_id" AND p."step" > 0;

-- DropIndex, CreateIndex: the scheduler's claim reads a campaign's due rows per mailbox (its prospects started from
-- it), and those not started yet (mailbox_id IS NULL), each range in next_at order
DROP INDEX "prospects_campaign_id_next_at_idx";
CREATE INDEX "prospects_campaign_id_mailbox_id_next_at_idx" ON "prospects"("campaign_id", "mailbox_id", "next_at");

-- AlterTable: a paused mailbox sends no outreach (rotation passes it over)
ALTER TABLE "mailboxes" ADD COLUMN "paused" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable: inbound mail as events (docs/inbound-events.md): what the email said
ALTER TABLE "inbound_messages" ADD COLUMN "to_address" TEXT NOT NULL DEFAULT '',
ADD COLUMN "text" TEXT,
ADD COLUMN "html" TEXT,
ADD COLUMN "raw" BYTEA;

-- CreateTable
CREATE TABLE "inbound_attachments" (
    "id" UUID NOT NULL,
    "inbound_message_id" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "filename" TEXT NOT NULL DEFAULT '',
    "content_type" TEXT NOT NULL DEFAULT 'application/octet-stream',
    "size" INTEGER NOT NULL,
    "content" BYTEA,

    CONSTRAINT "inbound_attachments_pkey" PRIMARY KEY ("id")
);

-- CreateIndex: the mailbox's latest outreach emails (rotation passes over a mailbox over its bounce rate)
CREATE INDEX "messages_mailbox_id_created_at_idx" ON "messages"("mailbox_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "inbound_attachments_inbound_message_id_position_key" ON "inbound_attachments"("inbound_message_id", "position");

-- AddForeignKey
ALTER TABLE "inbound_attachments" ADD CONSTRAINT "inbound_attachments_inbound_message_id_fkey" FOREIGN KEY ("inbound_message_id") REFERENCES "inbound_messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;
