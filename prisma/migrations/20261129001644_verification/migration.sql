-- Address verification (docs/verification.md): the last result kept on the subscriber or prospect it was asked for,
-- and what an import was asked to do with it and counted.
CREATE TYPE "VerificationResult" AS ENUM ('deliverable', 'risky', 'undeliverable', 'unknown');

ALTER TABLE "subscribers" ADD COLUMN "verification_result" "VerificationResult",
ADD COLUMN "verification_checked_at" TIMESTAMPTZ(3);

ALTER TABLE "prospects" ADD COLUMN "verification_result" "VerificationResult",
ADD COLUMN "verification_checked_at" TIMESTAMPTZ(3);

ALTER TABLE "imports" ADD COLUMN "verify" TEXT,
ADD COLUMN "verification" JSONB NOT NULL DEFAULT '{}',
ADD CONSTRAINT "imports_verify_check" CHECK ("verify" IN ('block_undeliverable', 'flag'));
