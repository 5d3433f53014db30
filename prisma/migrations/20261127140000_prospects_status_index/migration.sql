-- DropIndex: no statement reads prospects by (status, next_at) without their campaign: the scheduler's claim reads
-- each campaign's lanes through (campaign_id, mailbox_id, next_at) and the partial (campaign_id, next_at), the closing
-- rows through (campaign_id, status, step), the console through (campaign_id, status, id), an address across an
-- account's campaigns through (campaign_id, email). Every update of a prospect that is not HOT (the claim's mark, a
-- written step) wrote an entry in it for nothing.
DROP INDEX "prospects_status_next_at_idx";
