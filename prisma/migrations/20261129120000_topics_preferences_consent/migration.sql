-- Topics, the preference centre, the public archive and the consent ledger (docs/preferences.md).
CREATE TYPE "ConsentKind" AS ENUM ('subscribe', 'confirm', 'topics', 'pause', 'name', 'unsubscribe', 'import', 'suppression');

CREATE TYPE "ConsentSource" AS ENUM ('form', 'api_key', 'import', 'one_click', 'preference_page', 'admin', 'mail');

ALTER TYPE "MessageKind" ADD VALUE 'preferences';

ALTER TABLE "lists" ADD COLUMN "public" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN "topics" JSONB NOT NULL DEFAULT '[]';

ALTER TABLE "subscribers" ADD COLUMN "topics" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN "paused_until" TIMESTAMPTZ(3);

ALTER TABLE "broadcasts" ADD COLUMN "topics" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN "archive" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "consent_events" (
    "id" BIGSERIAL NOT NULL,
    "subscriber_id" INTEGER NOT NULL,
    "kind" "ConsentKind" NOT NULL,
    "source" "ConsentSource" NOT NULL,
    "ip" TEXT NOT NULL DEFAULT '',
    "form_text" TEXT NOT NULL DEFAULT '',
    "detail" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "consent_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "consent_events_subscriber_id_id_idx" ON "consent_events"("subscriber_id", "id");

-- AddForeignKey
ALTER TABLE "consent_events" ADD CONSTRAINT "consent_events_subscriber_id_fkey" FOREIGN KEY ("subscriber_id") REFERENCES "subscribers"("id") ON DELETE CASCADE ON UPDATE CASCADE;
