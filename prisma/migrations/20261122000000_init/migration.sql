-- CreateEnum
CREATE TYPE "IdempotencyState" AS ENUM ('processing', 'done');

-- CreateEnum
CREATE TYPE "SubscriberStatus" AS ENUM ('pending', 'active', 'unsubscribed', 'bounced', 'complained');

-- CreateEnum
CREATE TYPE "MessageKind" AS ENUM ('transactional', 'confirmation', 'sequence');

-- CreateEnum
CREATE TYPE "MessageStatus" AS ENUM ('queued', 'sending', 'sent', 'deferred', 'failed', 'bounced', 'cancelled');

-- CreateEnum
CREATE TYPE "CampaignGoal" AS ENUM ('links', 'sales', 'partners', 'press', 'hiring', 'reviews', 'winback', 'plain');

-- CreateEnum
CREATE TYPE "CampaignStatus" AS ENUM ('draft', 'running', 'paused');

-- CreateEnum
CREATE TYPE "ProspectStatus" AS ENUM ('new', 'ready', 'writing', 'hold', 'later', 'replied', 'agreed', 'placed', 'lost');

-- CreateEnum
CREATE TYPE "StopKind" AS ENUM ('email', 'domain');

-- CreateEnum
CREATE TYPE "SuppressionReason" AS ENUM ('bounced', 'complained');

-- CreateTable
CREATE TABLE "accounts" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "accounts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "mailboxes" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "address" TEXT NOT NULL,
    "name" TEXT NOT NULL DEFAULT '',
    "smtp_host" TEXT NOT NULL,
    "smtp_port" INTEGER NOT NULL,
    "smtp_secure" BOOLEAN NOT NULL DEFAULT false,
    "smtp_user" TEXT NOT NULL DEFAULT '',
    "smtp_password_enc" TEXT NOT NULL DEFAULT '',
    "daily_limit" INTEGER NOT NULL DEFAULT 50,
    "gap_seconds" INTEGER NOT NULL DEFAULT 60,
    "sequence_day" DATE,
    "sequence_count" INTEGER NOT NULL DEFAULT 0,
    "sequence_last_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "mailboxes_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "mailboxes_smtp_port_check" CHECK ("smtp_port" BETWEEN 1 AND 65535),
    CONSTRAINT "mailboxes_daily_limit_check" CHECK ("daily_limit" >= 0),
    CONSTRAINT "mailboxes_gap_seconds_check" CHECK ("gap_seconds" >= 0)
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "mailbox_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "fingerprint" CHAR(64) NOT NULL,
    "prefix" TEXT NOT NULL,
    "last_four" TEXT NOT NULL,
    "daily_limit" INTEGER NOT NULL,
    "prospects" BOOLEAN NOT NULL DEFAULT false,
    "revoked_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "api_keys_daily_limit_check" CHECK ("daily_limit" >= 0)
);

-- CreateTable
CREATE TABLE "key_daily_usage" (
    "api_key_id" INTEGER NOT NULL,
    "day" DATE NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "key_daily_usage_pkey" PRIMARY KEY ("api_key_id","day"),
    CONSTRAINT "key_daily_usage_count_check" CHECK ("count" >= 0)
);

-- CreateTable
CREATE TABLE "idempotency_records" (
    "id" SERIAL NOT NULL,
    "api_key_id" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "fingerprint" CHAR(64) NOT NULL,
    "state" "IdempotencyState" NOT NULL DEFAULT 'processing',
    "response_status" INTEGER,
    "response_body" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "lists" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "mailbox_id" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "confirm" BOOLEAN NOT NULL DEFAULT true,
    "subscriber_count" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "lists_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "lists_subscriber_count_check" CHECK ("subscriber_count" >= 0)
);

-- CreateTable
CREATE TABLE "subscribers" (
    "id" SERIAL NOT NULL,
    "list_id" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT NOT NULL DEFAULT '',
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "fields" JSONB NOT NULL DEFAULT '{}',
    "status" "SubscriberStatus" NOT NULL,
    "confirmation_sent_at" TIMESTAMPTZ(3),
    "confirmed_at" TIMESTAMPTZ(3),
    "unsubscribed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscribers_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "subscribers_email_lower_check" CHECK ("email" = lower("email"))
);

-- CreateTable
CREATE TABLE "confirmation_tokens" (
    "id" SERIAL NOT NULL,
    "subscriber_id" INTEGER NOT NULL,
    "token_hash" CHAR(64) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "confirmation_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sends" (
    "id" UUID NOT NULL,
    "account_id" INTEGER NOT NULL,
    "api_key_id" INTEGER NOT NULL,
    "from_name" TEXT NOT NULL DEFAULT '',
    "reply_to" TEXT,
    "subject" TEXT NOT NULL,
    "text" TEXT,
    "html" TEXT,
    "headers" JSONB NOT NULL DEFAULT '{}',
    "attachments" JSONB NOT NULL DEFAULT '[]',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "send_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sends_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "messages" (
    "id" UUID NOT NULL,
    "account_id" INTEGER NOT NULL,
    "mailbox_id" INTEGER NOT NULL,
    "kind" "MessageKind" NOT NULL,
    "send_id" UUID,
    "subscriber_id" INTEGER,
    "prospect_id" INTEGER,
    "step" INTEGER,
    "to" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "text" TEXT,
    "html" TEXT,
    "in_reply_to" TEXT,
    "references" TEXT,
    "message_id_header" TEXT NOT NULL,
    "status" "MessageStatus" NOT NULL DEFAULT 'queued',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "smtp_response" TEXT,
    "not_before" TIMESTAMPTZ(3),
    "enqueued_at" TIMESTAMPTZ(3),
    "locked_until" TIMESTAMPTZ(3),
    "sent_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "campaigns" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "mailbox_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "goal" "CampaignGoal" NOT NULL,
    "status" "CampaignStatus" NOT NULL DEFAULT 'draft',
    "stages" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "campaigns_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "campaign_steps" (
    "id" SERIAL NOT NULL,
    "campaign_id" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "subject" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "delay_hours" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "campaign_steps_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "campaign_steps_position_check" CHECK ("position" >= 1),
    CONSTRAINT "campaign_steps_delay_hours_check" CHECK ("delay_hours" >= 0)
);

-- CreateTable
CREATE TABLE "prospects" (
    "id" SERIAL NOT NULL,
    "campaign_id" INTEGER NOT NULL,
    "email" TEXT,
    "site" TEXT,
    "name" TEXT NOT NULL DEFAULT '',
    "fields" JSONB NOT NULL DEFAULT '{}',
    "status" "ProspectStatus" NOT NULL DEFAULT 'new',
    "reason" TEXT NOT NULL DEFAULT '',
    "step" INTEGER NOT NULL DEFAULT 0,
    "stage" INTEGER NOT NULL DEFAULT 0,
    "value" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "reply" TEXT NOT NULL DEFAULT '',
    "replied_at" TIMESTAMPTZ(3),
    "next_at" TIMESTAMPTZ(3),
    "closed_at" TIMESTAMPTZ(3),
    "thread_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "prospects_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "prospects_contact_check" CHECK ("email" IS NOT NULL OR "site" IS NOT NULL),
    CONSTRAINT "prospects_step_check" CHECK ("step" >= 0)
);

-- CreateTable
CREATE TABLE "stop_list" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "value" TEXT NOT NULL,
    "kind" "StopKind" NOT NULL DEFAULT 'email',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stop_list_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "suppressions" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "reason" "SuppressionReason" NOT NULL,
    "detail" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "suppressions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "mailboxes_account_id_address_key" ON "mailboxes"("account_id", "address");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_fingerprint_key" ON "api_keys"("fingerprint");

-- CreateIndex
CREATE UNIQUE INDEX "idempotency_records_api_key_id_key_key" ON "idempotency_records"("api_key_id", "key");

-- CreateIndex
CREATE UNIQUE INDEX "lists_key_key" ON "lists"("key");

-- CreateIndex
CREATE UNIQUE INDEX "subscribers_list_id_email_key" ON "subscribers"("list_id", "email");

-- CreateIndex
CREATE UNIQUE INDEX "confirmation_tokens_token_hash_key" ON "confirmation_tokens"("token_hash");

-- CreateIndex
CREATE UNIQUE INDEX "messages_message_id_header_key" ON "messages"("message_id_header");

-- CreateIndex
CREATE INDEX "messages_status_not_before_idx" ON "messages"("status", "not_before");

-- CreateIndex
CREATE INDEX "messages_account_id_to_idx" ON "messages"("account_id", "to");

-- CreateIndex
CREATE INDEX "messages_send_id_idx" ON "messages"("send_id");

-- CreateIndex
CREATE UNIQUE INDEX "messages_prospect_id_step_key" ON "messages"("prospect_id", "step");

-- CreateIndex
CREATE UNIQUE INDEX "campaign_steps_campaign_id_position_key" ON "campaign_steps"("campaign_id", "position");

-- CreateIndex
CREATE INDEX "prospects_campaign_id_site_idx" ON "prospects"("campaign_id", "site");

-- CreateIndex
CREATE INDEX "prospects_status_next_at_idx" ON "prospects"("status", "next_at");

-- CreateIndex
CREATE UNIQUE INDEX "prospects_campaign_id_email_key" ON "prospects"("campaign_id", "email");

-- CreateIndex
CREATE UNIQUE INDEX "stop_list_account_id_value_key" ON "stop_list"("account_id", "value");

-- CreateIndex
CREATE UNIQUE INDEX "suppressions_account_id_email_key" ON "suppressions"("account_id", "email");

-- AddForeignKey
ALTER TABLE "mailboxes" ADD CONSTRAINT "mailboxes_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "key_daily_usage" ADD CONSTRAINT "key_daily_usage_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lists" ADD CONSTRAINT "lists_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lists" ADD CONSTRAINT "lists_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_list_id_fkey" FOREIGN KEY ("list_id") REFERENCES "lists"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "confirmation_tokens" ADD CONSTRAINT "confirmation_tokens_subscriber_id_fkey" FOREIGN KEY ("subscriber_id") REFERENCES "subscribers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sends" ADD CONSTRAINT "sends_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sends" ADD CONSTRAINT "sends_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "messages" ADD CONSTRAINT "messages_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "messages" ADD CONSTRAINT "messages_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "messages" ADD CONSTRAINT "messages_send_id_fkey" FOREIGN KEY ("send_id") REFERENCES "sends"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "messages" ADD CONSTRAINT "messages_prospect_id_fkey" FOREIGN KEY ("prospect_id") REFERENCES "prospects"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "campaigns" ADD CONSTRAINT "campaigns_mailbox_id_fkey" FOREIGN KEY ("mailbox_id") REFERENCES "mailboxes"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "campaign_steps" ADD CONSTRAINT "campaign_steps_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "prospects" ADD CONSTRAINT "prospects_campaign_id_fkey" FOREIGN KEY ("campaign_id") REFERENCES "campaigns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "stop_list" ADD CONSTRAINT "stop_list_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "suppressions" ADD CONSTRAINT "suppressions_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
