-- A welcome-series step names a stored template by id (resolved from an id or alias when the list is saved), as a
-- broadcast does; the free-text column it replaces was never rendered.
-- AlterTable
ALTER TABLE "series_steps" DROP COLUMN "template",
ADD COLUMN     "template_id" INTEGER;

-- AddForeignKey
ALTER TABLE "series_steps" ADD CONSTRAINT "series_steps_template_id_fkey" FOREIGN KEY ("template_id") REFERENCES "templates"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
