-- Custom tracking domains with certificates from ACME (docs/tracking-domains.md): an account's own host for click and
-- open links, its certificate, the HTTP-01 challenges any API process answers, and the service's ACME account.
-- CreateEnum
CREATE TYPE "TrackingDomainStatus" AS ENUM ('pending', 'issuing', 'retrying', 'active', 'failed');

-- CreateTable
CREATE TABLE "tracking_domains" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "status" "TrackingDomainStatus" NOT NULL DEFAULT 'pending',
    "reason" TEXT,
    "seen" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "checked_at" TIMESTAMPTZ(3),
    "next_check_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "certificate_pem" TEXT,
    "private_key_enc" TEXT,
    "issued_at" TIMESTAMPTZ(3),
    "not_after" TIMESTAMPTZ(3),
    "renew_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tracking_domains_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "tracking_domains_attempts_check" CHECK ("attempts" >= 0),
    CONSTRAINT "tracking_domains_certificate_check" CHECK (("certificate_pem" IS NULL) = ("private_key_enc" IS NULL))
);

-- CreateTable
CREATE TABLE "acme_challenges" (
    "token" TEXT NOT NULL,
    "key_authorization" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "acme_challenges_pkey" PRIMARY KEY ("token")
);

-- CreateTable
CREATE TABLE "acme_accounts" (
    "directory_url" TEXT NOT NULL,
    "account_key_enc" TEXT NOT NULL,
    "account_url" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "acme_accounts_pkey" PRIMARY KEY ("directory_url")
);

-- CreateIndex
CREATE UNIQUE INDEX "tracking_domains_name_key" ON "tracking_domains"("name");

-- CreateIndex
CREATE INDEX "tracking_domains_account_id_idx" ON "tracking_domains"("account_id");

-- CreateIndex
CREATE INDEX "tracking_domains_next_check_at_idx" ON "tracking_domains"("next_check_at");

-- AddForeignKey
ALTER TABLE "tracking_domains" ADD CONSTRAINT "tracking_domains_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
