import { config } from '../config';

/** Who issues a mailbox's tokens: the two presets, or any OAuth2 server named by its URLs (`custom`). */
export type OAuthProvider = 'google' | 'microsoft' | 'custom';
export const OAUTH_PROVIDERS: readonly OAuthProvider[] = Object.freeze(['google', 'microsoft', 'custom'] as const);

/** What a preset knows: its endpoints, the scopes that allow XOAUTH2 for SMTP and IMAP, and its servers. */
export interface ProviderPreset {
  label: string;
  authUrl: string;
  tokenUrl: string;
  scope: string;
  /** extra parameters of the consent URL (a refresh token, and the consent screen every time) */
  authParams: Record<string, string>;
  smtp: (address: string) => string;
  imap: (address: string) => string;
}

/**
 * The presets (docs/mailboxes.md). Google: `https://mail.google.com/` is the one scope that allows XOAUTH2;
 * `access_type=offline` and `prompt=consent` make it answer a refresh token every time. Microsoft 365: the Exchange
 * Online scopes of SMTP AUTH and IMAP, `offline_access` for a refresh token. Both with `openid email`, whose id_token
 * names the account that consented (the console refuses another account than the mailbox's).
 */
export function preset(provider: 'google' | 'microsoft'): ProviderPreset {
  if (provider === 'google') {
    return {
      label: 'Google',
      authUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
      tokenUrl: 'https://oauth2.googleapis.com/token',
      scope: 'https://mail.google.com/ openid email',
      authParams: { access_type: 'offline', prompt: 'consent' },
      smtp: (address) => `smtps://${encodeURIComponent(address)}@smtp.gmail.com:465`,
      imap: (address) => `imaps://${encodeURIComponent(address)}@imap.gmail.com:993`,
    };
  }
  const tenant = encodeURIComponent(config().oauth.microsoft.tenant);
  return {
    label: 'Microsoft',
    authUrl: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/authorize`,
    tokenUrl: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/token`,
    scope: 'https://outlook.office.com/SMTP.Send https://outlook.office.com/IMAP.AccessAsUser.All offline_access openid email',
    authParams: { prompt: 'select_account' },
    smtp: (address) => `smtp://${encodeURIComponent(address)}@smtp.office365.com:587`,
    imap: (address) => `imaps://${encodeURIComponent(address)}@outlook.office365.com:993`,
  };
}

/** The app registered at the provider, from the settings (empty strings when not set). */
export function configuredClient(provider: OAuthProvider): { clientId: string; clientSecret: string } {
  if (provider === 'custom') return { clientId: '', clientSecret: '' };
  const { clientId, clientSecret } = config().oauth[provider];
  return { clientId, clientSecret };
}

/** Where the provider sends the browser back after consent. */
export const callbackUrl = (): string => `${config().publicUrl}/admin/oauth/callback`;
