-- AlterTable: an event meant for one endpoint only (an MX route's `endpoint`, docs/mx.md); NULL: every endpoint of the account subscribed to its type
ALTER TABLE "events" ADD COLUMN "endpoint_id" INTEGER;
