-- The worker process that claimed a message (apps/core/src/delivery/lease.ts): the reconciler leaves a row whose lease
-- ran out alone while that process's beacon in Redis lives (a Postgres outage longer than the lease).
ALTER TABLE "messages" ADD COLUMN "locked_by" TEXT;
