-- CreateEnum
CREATE TYPE "TemplateKind" AS ENUM ('template', 'layout');

-- CreateTable
CREATE TABLE "templates" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "alias" TEXT,
    "kind" "TemplateKind" NOT NULL DEFAULT 'template',
    "subject" TEXT NOT NULL DEFAULT '',
    "html" TEXT,
    "text" TEXT,
    "layout_id" INTEGER,
    "required" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "inline_css" BOOLEAN NOT NULL DEFAULT true,
    "text_from_html" BOOLEAN NOT NULL DEFAULT true,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "templates_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "template_versions" (
    "id" SERIAL NOT NULL,
    "template_id" INTEGER NOT NULL,
    "version" INTEGER NOT NULL,
    "content" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "template_versions_pkey" PRIMARY KEY ("id")
);

-- AlterTable
ALTER TABLE "broadcasts" ADD COLUMN     "template_id" INTEGER;

-- AlterTable
ALTER TABLE "campaign_steps" ADD COLUMN     "template_id" INTEGER;

-- CreateIndex
CREATE UNIQUE INDEX "templates_account_id_alias_key" ON "templates"("account_id", "alias");

-- CreateIndex
CREATE INDEX "templates_account_id_id_idx" ON "templates"("account_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "template_versions_template_id_version_key" ON "template_versions"("template_id", "version");

-- AddForeignKey
ALTER TABLE "templates" ADD CONSTRAINT "templates_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "templates" ADD CONSTRAINT "templates_layout_id_fkey" FOREIGN KEY ("layout_id") REFERENCES "templates"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "template_versions" ADD CONSTRAINT "template_versions_template_id_fkey" FOREIGN KEY ("template_id") REFERENCES "templates"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "broadcasts" ADD CONSTRAINT "broadcasts_template_id_fkey" FOREIGN KEY ("template_id") REFERENCES "templates"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "campaign_steps" ADD CONSTRAINT "campaign_steps_template_id_fkey" FOREIGN KEY ("template_id") REFERENCES "templates"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
