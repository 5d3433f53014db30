-- Sending domains proven in DNS (docs/domains.md): an account's domains, their last check, and their DKIM key pairs.
-- CreateEnum
CREATE TYPE "DomainStatus" AS ENUM ('pending', 'verified', 'failed');

-- CreateEnum
CREATE TYPE "DomainKeyState" AS ENUM ('next', 'active', 'retired');

-- CreateTable
CREATE TABLE "domains" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "status" "DomainStatus" NOT NULL DEFAULT 'pending',
    "failures" INTEGER NOT NULL DEFAULT 0,
    "records" JSONB NOT NULL DEFAULT '[]',
    "reason" TEXT,
    "checked_at" TIMESTAMPTZ(3),
    "verified_at" TIMESTAMPTZ(3),
    "next_check_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "domains_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "domains_failures_check" CHECK ("failures" >= 0)
);

-- CreateTable
CREATE TABLE "domain_keys" (
    "id" SERIAL NOT NULL,
    "domain_id" INTEGER NOT NULL,
    "selector" TEXT NOT NULL,
    "state" "DomainKeyState" NOT NULL,
    "rsa_private_key_enc" TEXT NOT NULL,
    "rsa_public_key" TEXT NOT NULL,
    "ed25519_private_key_enc" TEXT NOT NULL,
    "ed25519_public_key" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "activated_at" TIMESTAMPTZ(3),
    "retired_at" TIMESTAMPTZ(3),

    CONSTRAINT "domain_keys_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "domains_account_id_name_key" ON "domains"("account_id", "name");

-- CreateIndex
CREATE INDEX "domains_next_check_at_idx" ON "domains"("next_check_at");

-- CreateIndex
CREATE UNIQUE INDEX "domain_keys_domain_id_selector_key" ON "domain_keys"("domain_id", "selector");

-- AddForeignKey
ALTER TABLE "domains" ADD CONSTRAINT "domains_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "domain_keys" ADD CONSTRAINT "domain_keys_domain_id_fkey" FOREIGN KEY ("domain_id") REFERENCES "domains"("id") ON DELETE CASCADE ON UPDATE CASCADE;
