-- Each delivery attempt of a message that did not deliver (deferred, failed, bounced at SMTP time), with the server's
-- answer: the message row keeps only the last one. A delivered attempt has no row: the message row has it (sent_at,
-- smtp_response). Written in the statement that records the attempt on the message (delivery/repository.ts).
-- CreateTable
CREATE TABLE "message_attempts" (
    "message_id" UUID NOT NULL,
    "attempt" INTEGER NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "outcome" "MessageStatus" NOT NULL,
    "response" TEXT NOT NULL,
    "worker" TEXT,

    CONSTRAINT "message_attempts_pkey" PRIMARY KEY ("message_id","attempt")
);

-- CreateIndex
CREATE INDEX "message_attempts_at_idx" ON "message_attempts"("at");

-- AddForeignKey
ALTER TABLE "message_attempts" ADD CONSTRAINT "message_attempts_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;
