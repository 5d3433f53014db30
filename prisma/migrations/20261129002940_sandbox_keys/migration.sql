-- Sandbox (test) keys (docs/sandbox.md): a key's mode, the sends its test keys make, and the sink their messages go to.
CREATE TYPE "KeyMode" AS ENUM ('live', 'test');

ALTER TABLE "api_keys" ADD COLUMN "mode" "KeyMode" NOT NULL DEFAULT 'live';

ALTER TABLE "sends" ADD COLUMN "sandbox" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "sandbox_messages" (
    "message_id" UUID NOT NULL,
    "raw" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sandbox_messages_pkey" PRIMARY KEY ("message_id")
);

-- AddForeignKey
ALTER TABLE "sandbox_messages" ADD CONSTRAINT "sandbox_messages_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;
