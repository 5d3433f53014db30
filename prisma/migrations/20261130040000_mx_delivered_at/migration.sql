-- AlterTable: when the MX's message went to the customer (taken, or released), the order GET /api/v1/inbound?source=mx reads in
ALTER TABLE "mx_messages" ADD COLUMN "delivered_at" TIMESTAMPTZ(3);
UPDATE "mx_messages" SET "delivered_at" = "received_at" WHERE "status" = 'delivered';

-- CreateIndex
CREATE INDEX "mx_messages_account_id_delivered_at_idx" ON "mx_messages"("account_id", "delivered_at");
