-- Mailboxes that sign in with OAuth2 (docs/mailboxes.md): XOAUTH2 for SMTP and IMAP, the refresh token encrypted at
-- rest, and the state a refused refresh token leaves the mailbox in.
ALTER TABLE "mailboxes" ADD COLUMN "auth_type" TEXT NOT NULL DEFAULT 'password',
ADD COLUMN "oauth_provider" TEXT,
ADD COLUMN "oauth_client_id" TEXT,
ADD COLUMN "oauth_client_secret_enc" TEXT,
ADD COLUMN "oauth_refresh_token_enc" TEXT,
ADD COLUMN "oauth_token_url" TEXT,
ADD COLUMN "oauth_auth_url" TEXT,
ADD COLUMN "oauth_scope" TEXT,
ADD COLUMN "auth_status" TEXT NOT NULL DEFAULT 'active',
ADD COLUMN "disconnected_at" TIMESTAMPTZ(3),
ADD COLUMN "disconnect_reason" TEXT;

ALTER TABLE "mailboxes" ADD CONSTRAINT "mailboxes_auth_type_check" CHECK ("auth_type" IN ('password', 'oauth2'));
ALTER TABLE "mailboxes" ADD CONSTRAINT "mailboxes_auth_status_check" CHECK ("auth_status" IN ('active', 'needs_reconnect'));
