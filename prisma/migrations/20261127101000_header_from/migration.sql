-- A message submitted over SMTP keeps the header From's address its submission parsed at accept (submission/mime.ts),
-- so that delivery signs with that domain's keys without parsing the MIME again. Sends accepted before this migration
-- have none: their delivery reads the From from the stored MIME (delivery/compose.ts), as it did before.
-- AlterTable
ALTER TABLE "sends" ADD COLUMN     "header_from" TEXT;
