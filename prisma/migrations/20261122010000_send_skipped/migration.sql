-- AlterTable
ALTER TABLE "sends" ADD COLUMN     "skipped" JSONB NOT NULL DEFAULT '[]';
