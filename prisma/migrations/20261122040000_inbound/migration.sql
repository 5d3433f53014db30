-- CreateEnum
CREATE TYPE "InboundKind" AS ENUM ('bounce', 'complaint', 'auto_reply', 'reply', 'other');

-- AlterTable
ALTER TABLE "mailboxes" ADD COLUMN     "imap_host" TEXT,
ADD COLUMN     "imap_port" INTEGER,
ADD COLUMN     "imap_secure" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "imap_user" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "imap_password_enc" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "inbound_state" TEXT NOT NULL DEFAULT 'off',
ADD COLUMN     "inbound_error" TEXT,
ADD COLUMN     "inbound_checked_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "inbound_cursors" (
    "mailbox_id" INTEGER NOT NULL,
    "uid_validity" BIGINT NOT NULL,
    "last_uid" BIGINT NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "inbound_cursors_pkey" PRIMARY KEY ("mailbox_id")
);

-- CreateTable
CREATE TABLE "inbound_messages" (
    "id" SERIAL NOT NULL,
    "mailbox_id" INTEGER NOT NULL,
    "uid_validity" BIGINT NOT NULL,
    "uid" BIGINT NOT NULL,
    "kind" "InboundKind" NOT NULL,
    "from_address" TEXT NOT NULL DEFAULT '',
    "subject" TEXT NOT NULL DEFAULT '',
    "message_id" TEXT,
    "prospect_id" INTEGER,
    "related_id" UUID,
    "detail" TEXT NOT NULL DEFAULT '',
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "inbound_messages_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "inbound_messages_mailbox_id_id_idx" ON "inbound_messages"("mailbox_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "inbound_messages_mailbox_id_uid_validity_uid_key" ON "inbound_messages"("mailbox_id", "uid_validity", "uid");

-- AddForeignKey
ALTER TABLE "inbound_cursors" ADD CONSTRAINT "inbound_cursors_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "inbound_messages" ADD CONSTRAINT "inbound_messages_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE CASCADE ON UPDATE CASCADE;
