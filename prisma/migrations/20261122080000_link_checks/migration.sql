-- AlterTable
ALTER TABLE "campaigns" ADD COLUMN     "target_anchor" TEXT,
ADD COLUMN     "target_url" TEXT;

-- AlterTable
ALTER TABLE "prospects" ADD COLUMN     "link_anchor" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "link_check_at" TIMESTAMPTZ(3),
ADD COLUMN     "link_checked_at" TIMESTAMPTZ(3),
ADD COLUMN     "link_error" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "link_found" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "link_href" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "link_misses" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "link_rel" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "link_url" TEXT;

-- AlterTable
ALTER TABLE "idempotency_records" ADD COLUMN     "route" TEXT NOT NULL DEFAULT 'POST /send';

-- DropIndex
DROP INDEX "idempotency_records_api_key_id_key_key";

-- CreateIndex
CREATE UNIQUE INDEX "idempotency_records_api_key_id_route_key_key" ON "idempotency_records"("api_key_id", "route", "key");

-- CreateIndex
CREATE INDEX "prospects_link_check_at_idx" ON "prospects"("link_check_at");
