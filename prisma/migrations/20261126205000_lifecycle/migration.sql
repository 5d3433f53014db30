-- Lifecycle mail (docs/lists.md, docs/broadcasts.md): a list's welcome series, each subscriber's way through it, and
-- a broadcast's segment.
ALTER TYPE "MessageKind" ADD VALUE 'series';

-- CreateEnum
CREATE TYPE "SeriesRunStatus" AS ENUM ('waiting', 'done', 'ended');

-- AlterTable
ALTER TABLE "broadcasts" ADD COLUMN "segment" JSONB;

-- CreateTable
CREATE TABLE "series_steps" (
    "id" SERIAL NOT NULL,
    "list_id" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "subject" TEXT NOT NULL,
    "html" TEXT,
    "text" TEXT,
    "template" TEXT,
    "delay_hours" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "series_steps_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "series_steps_delay_hours_check" CHECK ("delay_hours" >= 0)
);

-- CreateTable
CREATE TABLE "series_runs" (
    "id" SERIAL NOT NULL,
    "list_id" INTEGER NOT NULL,
    "subscriber_id" INTEGER NOT NULL,
    "step" INTEGER NOT NULL DEFAULT 0,
    "status" "SeriesRunStatus" NOT NULL DEFAULT 'waiting',
    "next_at" TIMESTAMPTZ(3),
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "series_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "series_steps_list_id_position_key" ON "series_steps"("list_id", "position");

-- CreateIndex
CREATE UNIQUE INDEX "series_runs_subscriber_id_key" ON "series_runs"("subscriber_id");

-- CreateIndex
CREATE INDEX "series_runs_status_next_at_idx" ON "series_runs"("status", "next_at");

-- CreateIndex
CREATE INDEX "series_runs_list_id_step_idx" ON "series_runs"("list_id", "step");

-- AddForeignKey
ALTER TABLE "series_steps" ADD CONSTRAINT "series_steps_list_id_fkey" FOREIGN KEY ("list_id") REFERENCES "lists"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "series_runs" ADD CONSTRAINT "series_runs_list_id_fkey" FOREIGN KEY ("list_id") REFERENCES "lists"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "series_runs" ADD CONSTRAINT "series_runs_subscriber_id_fkey" FOREIGN KEY ("subscriber_id") REFERENCES "subscribers"("id") ON DELETE CASCADE ON UPDATE CASCADE;
