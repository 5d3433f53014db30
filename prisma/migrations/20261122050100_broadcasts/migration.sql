-- CreateEnum
CREATE TYPE "BroadcastStatus" AS ENUM ('draft', 'scheduled', 'sending', 'paused', 'sent', 'cancelled');

-- AlterTable
ALTER TABLE "mailboxes" ADD COLUMN     "max_per_second" INTEGER,
ADD COLUMN     "dkim_domain" TEXT,
ADD COLUMN     "dkim_selector" TEXT,
ADD COLUMN     "dkim_private_key_enc" TEXT;

-- AlterTable
ALTER TABLE "messages" ADD COLUMN     "broadcast_id" INTEGER,
ADD COLUMN     "headers" JSONB;

-- CreateTable
CREATE TABLE "broadcasts" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "list_id" INTEGER NOT NULL,
    "subject" TEXT NOT NULL,
    "html" TEXT,
    "text" TEXT,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "status" "BroadcastStatus" NOT NULL DEFAULT 'draft',
    "send_at" TIMESTAMPTZ(3),
    "audience" INTEGER NOT NULL DEFAULT 0,
    "runs" INTEGER NOT NULL DEFAULT 0,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "broadcasts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "broadcast_recipients" (
    "broadcast_id" INTEGER NOT NULL,
    "subscriber_id" INTEGER NOT NULL,

    CONSTRAINT "broadcast_recipients_pkey" PRIMARY KEY ("broadcast_id","subscriber_id")
);

-- CreateIndex
CREATE INDEX "broadcasts_list_id_id_idx" ON "broadcasts"("list_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "messages_broadcast_id_subscriber_id_key" ON "messages"("broadcast_id", "subscriber_id");

-- AddForeignKey
ALTER TABLE "messages" ADD CONSTRAINT "messages_broadcast_id_fkey" FOREIGN KEY ("broadcast_id") REFERENCES "broadcasts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "broadcasts" ADD CONSTRAINT "broadcasts_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "broadcasts" ADD CONSTRAINT "broadcasts_list_id_fkey" FOREIGN KEY ("list_id") REFERENCES "lists"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "broadcast_recipients" ADD CONSTRAINT "broadcast_recipients_broadcast_id_fkey" FOREIGN KEY ("broadcast_id") REFERENCES "broadcasts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
