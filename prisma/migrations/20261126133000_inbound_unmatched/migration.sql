-- A bounce or complaint report that proves no message of ours (no valid VERP address, no Message-ID we sent to that
-- recipient) is recorded with why, and changes nothing (docs/inbound.md, "Which reports act").
ALTER TABLE "inbound_messages" ADD COLUMN "unmatched" TEXT;
