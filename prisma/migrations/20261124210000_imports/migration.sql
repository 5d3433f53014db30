-- CreateEnum
CREATE TYPE "ImportStatus" AS ENUM ('queued', 'running', 'done', 'failed');

-- AlterTable
ALTER TABLE "subscribers" ADD COLUMN     "consent_source" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "consent_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "imports" (
    "id" SERIAL NOT NULL,
    "list_id" INTEGER NOT NULL,
    "format" TEXT NOT NULL,
    "columns" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "status" "ImportStatus" NOT NULL DEFAULT 'queued',
    "default_status" TEXT,
    "received" BOOLEAN NOT NULL DEFAULT false,
    "cursor" INTEGER NOT NULL DEFAULT 0,
    "total" INTEGER NOT NULL DEFAULT 0,
    "added" INTEGER NOT NULL DEFAULT 0,
    "updated" INTEGER NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "refused" INTEGER NOT NULL DEFAULT 0,
    "errors" JSONB NOT NULL DEFAULT '[]',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "imports_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "import_lines" (
    "import_id" INTEGER NOT NULL,
    "line" INTEGER NOT NULL,
    "text" TEXT NOT NULL,

    CONSTRAINT "import_lines_pkey" PRIMARY KEY ("import_id","line")
);

-- CreateIndex
CREATE INDEX "imports_status_idx" ON "imports"("status");

-- AddForeignKey
ALTER TABLE "imports" ADD CONSTRAINT "imports_list_id_fkey" FOREIGN KEY ("list_id") REFERENCES "lists"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "import_lines" ADD CONSTRAINT "import_lines_import_id_fkey" FOREIGN KEY ("import_id") REFERENCES "imports"("id") ON DELETE CASCADE ON UPDATE CASCADE;
