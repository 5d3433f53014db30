-- AlterTable: a click counts once per email and link; the row of a message, address and kind (person or scanner) keeps
-- the number of its requests
ALTER TABLE "link_clicks" ADD COLUMN     "count" INTEGER NOT NULL DEFAULT 1;

-- rows written before, one per request, folded into one per message, address and kind (the first one kept)
UPDATE "link_clicks" AS l SET "count" = d.n
FROM (SELECT min("id") AS id, count(*)::int AS n FROM "link_clicks" GROUP BY "message_id", "url", "scanner" HAVING count(*) > 1) AS d
WHERE l."id" = d.id;
DELETE FROM "link_clicks" AS l USING "link_clicks" AS k
WHERE k."message_id" = l."message_id" AND k."url" = l."url" AND k."scanner" = l."scanner" AND k."id" < l."id";

-- DropIndex: the unique index below starts with message_id
DROP INDEX "link_clicks_message_id_idx";

-- CreateIndex
CREATE UNIQUE INDEX "link_clicks_message_id_url_scanner_key" ON "link_clicks"("message_id", "url", "scanner");
