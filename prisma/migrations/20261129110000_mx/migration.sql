-- An MX of its own (docs/mx.md, DESIGN 23): inbound domains, their routes, and the messages the MX accepted (raw MIME
-- written before the 250).
-- AlterTable
ALTER TABLE "domains" ADD COLUMN "inbound" BOOLEAN NOT NULL DEFAULT false;

-- CreateEnum
CREATE TYPE "InboundRouteAction" AS ENUM ('webhook', 'hold', 'reject');

-- CreateEnum
CREATE TYPE "MxMessageStatus" AS ENUM ('delivered', 'held', 'dropped', 'report');

-- CreateTable
CREATE TABLE "inbound_routes" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "domain_id" INTEGER NOT NULL,
    "match" TEXT NOT NULL,
    "action" "InboundRouteAction" NOT NULL,
    "endpoint_id" INTEGER,
    "spam_threshold" DOUBLE PRECISION,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "inbound_routes_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "inbound_routes_match_check" CHECK ("match" ~ '^(\*|[^@\s*]+(\+\*)?)$')
);

-- CreateTable
CREATE TABLE "mx_messages" (
    "id" UUID NOT NULL,
    "account_id" INTEGER NOT NULL,
    "route_id" INTEGER,
    "domain" TEXT NOT NULL,
    "status" "MxMessageStatus" NOT NULL,
    "reason" TEXT,
    "hash" TEXT,
    "mail_from" TEXT NOT NULL,
    "rcpt_to" TEXT[],
    "client_address" TEXT NOT NULL,
    "helo" TEXT NOT NULL,
    "from_address" TEXT NOT NULL DEFAULT '',
    "subject" TEXT NOT NULL DEFAULT '',
    "auth" JSONB NOT NULL,
    "spam" JSONB,
    "raw" BYTEA NOT NULL,
    "size" INTEGER NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "mx_messages_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "inbound_routes_domain_id_match_key" ON "inbound_routes"("domain_id", "match");

-- CreateIndex
CREATE INDEX "inbound_routes_account_id_idx" ON "inbound_routes"("account_id");

-- CreateIndex
CREATE INDEX "mx_messages_account_id_received_at_idx" ON "mx_messages"("account_id", "received_at");

-- CreateIndex
CREATE INDEX "mx_messages_status_received_at_idx" ON "mx_messages"("status", "received_at");

-- AddForeignKey
ALTER TABLE "inbound_routes" ADD CONSTRAINT "inbound_routes_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "inbound_routes" ADD CONSTRAINT "inbound_routes_domain_id_fkey" FOREIGN KEY ("domain_id") REFERENCES "domains"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "mx_messages" ADD CONSTRAINT "mx_messages_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
