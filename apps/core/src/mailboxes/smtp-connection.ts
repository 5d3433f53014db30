import type SMTPPool from 'nodemailer/lib/smtp-pool';
import type { SmtpSettings } from './index';
import type { OAuthLogin } from './oauth-login';


/**
 * How to talk to a mailbox's server, by its URL (docs/sending.md): `smtps://` is TLS from the start; `smtp://` upgrades
 * with STARTTLS when the server offers it, and a login waits for it (never a password in clear); `?tls=off` is plain
 * SMTP, no STARTTLS even when offered; `?tls=insecure` is TLS that accepts any certificate (self-signed, expired).
 */
export function connectionOptions(smtp: SmtpSettings, oauth?: OAuthLogin): SMTPPool.Options {
  return {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    auth: oauth ? xoauth2(smtp.user, oauth) : smtp.user ? { user: smtp.user, pass: smtp.password } : undefined,
    requireTLS: !smtp.secure && smtp.tls !== 'off' && smtp.user !== '',
    ignoreTLS: !smtp.secure && smtp.tls === 'off',
    ...(smtp.tls === 'insecure' ? { tls: { rejectUnauthorized: false } } : {}),
  };
}

/**
 * nodemailer's XOAUTH2 login (docs/mailboxes.md): it asks `provide` for a token at each new connection, and once more
 * with `renew` when the server refuses the one it had. An error (MailboxNeedsReconnect) comes out of sendMail as is.
 */
function xoauth2(user: string, provide: OAuthLogin): SMTPPool.Options['auth'] {
  return {
    type: 'OAuth2',
    user,
    provisionCallback: (_user: string, renew: boolean, callback: (err: Error | null, token?: string, expires?: number) => void) => {
      provide(renew).then(({ token, expires }) => callback(null, token, expires), (err: Error) => callback(err));
    },
  } as SMTPPool.Options['auth'];
}
