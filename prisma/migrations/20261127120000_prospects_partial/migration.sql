-- DropIndex, CreateIndex: a campaign's prospects are looked up by site, and the link checks find theirs by
-- link_check_at, only for rows that have one; most outreach prospects have neither. Partial, these two indexes take no
-- entry for such a row, and each update of a prospect that is not HOT (the scheduler's claim, a step written) writes
-- two index entries fewer (apps/core/src/outreach/prospects.ts, apps/core/src/links/repository.ts).
DROP INDEX "prospects_campaign_id_site_idx";
CREATE INDEX "prospects_campaign_id_site_idx" ON "prospects"("campaign_id", "site") WHERE "site" IS NOT NULL;
DROP INDEX "prospects_link_check_at_idx";
CREATE INDEX "prospects_link_check_at_idx" ON "prospects"("link_check_at") WHERE "link_check_at" IS NOT NULL;
