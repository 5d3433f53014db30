-- AlterTable: a send submitted over SMTP keeps its MIME as written
ALTER TABLE "sends" ADD COLUMN "raw" BYTEA;
