-- DESIGN 23: an inbound domain's mail is taken by the MX once a check has found its MX record (docs/mx.md)
ALTER TABLE "domains" ADD COLUMN "inbound_mx_found_at" TIMESTAMPTZ(3);

-- an inbound domain whose last check found the record keeps receiving; the others are checked again at once
UPDATE "domains" SET "inbound_mx_found_at" = COALESCE("checked_at", now())
WHERE "inbound" AND "records" @> '[{"purpose": "inbound", "status": "found"}]';
UPDATE "domains" SET "next_check_at" = now() WHERE "inbound" AND "inbound_mx_found_at" IS NULL;
