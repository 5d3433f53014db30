-- `?tls=insecure` on a mailbox's SMTP URL (docs/sending.md): TLS without checking the server's certificate.
ALTER TABLE "mailboxes" ADD COLUMN "smtp_tls_insecure" BOOLEAN NOT NULL DEFAULT false;
