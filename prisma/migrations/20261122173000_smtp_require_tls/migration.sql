-- AlterTable: an smtp:// mailbox with a login refuses to send its password unencrypted (STARTTLS first) unless its
-- URL says ?tls=off (a local sink); see docs/sending.md
ALTER TABLE "mailboxes" ADD COLUMN "smtp_require_tls" BOOLEAN NOT NULL DEFAULT true;
