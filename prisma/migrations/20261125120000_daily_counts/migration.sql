-- CreateTable: what happened each UTC day per account, mailbox, campaign and broadcast (0: none), for GET /admin/api/stats
CREATE TABLE "daily_counts" (
    "account_id" INTEGER NOT NULL,
    "mailbox_id" INTEGER NOT NULL,
    "campaign_id" INTEGER NOT NULL DEFAULT 0,
    "broadcast_id" INTEGER NOT NULL DEFAULT 0,
    "day" DATE NOT NULL,
    "sent" INTEGER NOT NULL DEFAULT 0,
    "delivered" INTEGER NOT NULL DEFAULT 0,
    "bounced_dead" INTEGER NOT NULL DEFAULT 0,
    "bounced_other" INTEGER NOT NULL DEFAULT 0,
    "complained" INTEGER NOT NULL DEFAULT 0,
    "unsubscribed" INTEGER NOT NULL DEFAULT 0,
    "replied" INTEGER NOT NULL DEFAULT 0,
    "clicked" INTEGER NOT NULL DEFAULT 0,
    "opened" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "daily_counts_pkey" PRIMARY KEY ("account_id","mailbox_id","campaign_id","broadcast_id","day")
);

-- CreateIndex
CREATE INDEX "daily_counts_day_idx" ON "daily_counts"("day");

-- AddForeignKey
ALTER TABLE "daily_counts" ADD CONSTRAINT "daily_counts_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
