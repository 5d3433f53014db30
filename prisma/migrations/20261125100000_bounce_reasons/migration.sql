-- AlterTable: a mailbox's envelope sender, its own address or VERP (docs/inbound.md)
ALTER TABLE "mailboxes" ADD COLUMN "return_path" TEXT NOT NULL DEFAULT 'address';
ALTER TABLE "mailboxes" ADD CONSTRAINT "mailboxes_return_path_check" CHECK ("return_path" IN ('address', 'verp'));

-- AlterTable: what a bounce said about a message
ALTER TABLE "messages" ADD COLUMN "bounce" JSONB;

-- AlterTable: the reason of a bounce suppression
ALTER TABLE "suppressions" ADD COLUMN "bounce_reason" TEXT;

-- AlterTable: the reason read from an inbound report
ALTER TABLE "inbound_messages" ADD COLUMN "reason" TEXT;
