/** `npm run admin -- mailbox connect ...`: connects a mailbox with OAuth2 (docs/mailboxes.md), imported by scripts/admin.ts. */
import type { Db } from '../apps/core/src/db';
import { AppError, BadRequest } from '../apps/core/src/errors';
import { connectResult, startConnect, startReconnect, type ConnectInput } from '../apps/core/src/oauth/connect';
import { CLI_AUDIT } from './admin-audit';
import { callbackUrl, OAUTH_PROVIDERS, type OAuthProvider } from '../apps/core/src/mailboxes/oauth-providers';

export const OAUTH_HELP = `  mailbox connect --provider google|microsoft|custom --account ID --address ADDRESS [--name NAME]
                  [--client-id ID] [--client-secret SECRET] [--auth-url URL] [--token-url URL] [--scope S] [--smtp URL] [--imap URL]
  mailbox connect --mailbox ID     (reconnects it)
                                   (prints the consent URL, waits up to 10 minutes for the sign-in, prints the mailbox)
`;

export const oauthOptions = {
  provider: { type: 'string' },
  'client-id': { type: 'string' },
  'client-secret': { type: 'string' },
  'auth-url': { type: 'string' },
  'token-url': { type: 'string' },
  scope: { type: 'string' },
} as const;

type Flags = Record<string, string | boolean | undefined>;

const WAIT_MS = 600_000;
const POLL_MS = 500;
const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);

export async function mailboxConnect(d: Db, flags: Flags): Promise<unknown> {
  let started: { url: string; state: string };
  let address: string;
  if (flags.mailbox !== undefined) {
    const id = Number(flags.mailbox);
    if (!Number.isInteger(id) || id < 1) throw new BadRequest('--mailbox must be a mailbox id');
    const again = await startReconnect(d, id, { kind: 'cli', actor: CLI_AUDIT.actor });
    started = again;
    address = again.address;
  } else {
    const provider = text(flags.provider) as OAuthProvider | undefined;
    if (!provider || !OAUTH_PROVIDERS.includes(provider)) throw new BadRequest(`--provider must be one of ${OAUTH_PROVIDERS.join(', ')}`);
    const account = Number(flags.account);
    if (!Number.isInteger(account) || account < 1) throw new BadRequest('--account must be an account id');
    const input: ConnectInput = {
      account,
      provider,
      address: text(flags.address) ?? '',
      name: text(flags.name),
      client_id: text(flags['client-id']),
      client_secret: text(flags['client-secret']),
      auth_url: text(flags['auth-url']),
      token_url: text(flags['token-url']),
      scope: text(flags.scope),
      smtp: text(flags.smtp),
      imap: text(flags.imap),
    };
    started = await startConnect(input, { kind: 'cli', actor: CLI_AUDIT.actor });
    address = input.address.toLowerCase();
  }
  process.stderr.write(
    `Open this URL in a browser and sign in as ${address}:\n\n${started.url}\n\nWaiting for the provider to come back to ${callbackUrl()} (up to 10 minutes)...\n`,
  );
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const result = await connectResult(started.state);
    if (result?.ok) return { mailbox: result.mailbox, reconnected: result.reconnected };
    if (result) throw new AppError(result.error);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  throw new AppError('No answer from the provider within 10 minutes; nothing was changed. Run the command again.');
}
