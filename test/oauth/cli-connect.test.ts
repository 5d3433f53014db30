import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { AuthServer, CLIENT } from '../helpers/oauth';
import { runTs } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/** `npm run admin -- mailbox connect`: prints the consent URL, waits for the callback (served by the API), prints the mailbox. */
const ctx = useApi();
const auth = new AuthServer();
beforeAll(() => auth.start(), 30_000);
afterAll(() => auth.stop());

/** Runs the command; follows its consent URL as a browser would, back to the API's callback; answers the process's end. */
async function connectWithCli(args: string[]) {
  const proc = runTs('scripts/admin.ts', ['mailbox', 'connect', ...args]);
  const consent = await waitFor(() => /^(https?:\/\/\S+\/authorize\?\S+)$/m.exec(proc.stderr())?.[1] ?? (proc.child.exitCode !== null ? Promise.reject(new Error(proc.stderr())) : null), {
    timeout: 30_000,
    what: 'the consent URL',
  });
  const back = await fetch(consent, { redirect: 'manual' });
  const callback = new URL(back.headers.get('location')!);
  expect(callback.pathname).toBe('/admin/oauth/callback');
  const page = await request(ctx.api.app).get(`${callback.pathname}${callback.search}`);
  const code = await proc.exited;
  return { code, out: proc.stdout(), err: proc.stderr(), page };
}

test('mailbox connect creates the mailbox from the provider\'s answer, and --mailbox reconnects it', async () => {
  const account = await makeAccount();
  await auth.set({ login: 'cli@corp.test' });
  const first = await connectWithCli([
    '--provider', 'custom', '--account', String(account.id), '--address', 'cli@corp.test',
    '--client-id', CLIENT.id, '--client-secret', CLIENT.secret, '--auth-url', auth.authUrl, '--token-url', auth.tokenUrl, '--scope', 'openid email mail',
    '--smtp', 'smtp://cli%40corp.test@127.0.0.1:2525?tls=off',
  ]);
  expect(first.page.status).toBe(200);
  expect(first.page.text).toContain('the terminal shows the mailbox');
  expect(first.code).toBe(0);
  const answer = JSON.parse(first.out);
  expect(answer).toMatchObject({ ok: true, reconnected: false, mailbox: { address: 'cli@corp.test', status: 'active', auth: { type: 'oauth2', provider: 'custom' } } });
  expect(first.out).not.toContain(CLIENT.secret);
  const row = await db().mailbox.findUniqueOrThrow({ where: { id: answer.mailbox.id } });
  expect(row.oauthRefreshTokenEnc).toBeTruthy();

  const again = await connectWithCli(['--mailbox', String(row.id)]);
  expect(again.code).toBe(0);
  expect(JSON.parse(again.out)).toMatchObject({ ok: true, reconnected: true, mailbox: { id: row.id } });
  const after = await db().mailbox.findUniqueOrThrow({ where: { id: row.id } });
  expect(after.oauthRefreshTokenEnc).not.toBe(row.oauthRefreshTokenEnc);
  // each written to the audit log, by the CLI as the admin token, the refresh token redacted
  const entries = await db().auditEntry.findMany({ where: { resource: 'mailbox', resourceId: String(row.id) }, orderBy: { id: 'asc' } });
  expect(entries).toMatchObject([
    { action: 'create', via: 'cli', actorKind: 'admin-token', accountId: account.id },
    { action: 'reconnect', via: 'cli', actorKind: 'admin-token', accountId: account.id },
  ]);
  expect(JSON.stringify(entries.map((e) => [e.before, e.after]))).not.toContain(CLIENT.secret);
}, 90_000);

test('a refused consent ends the command with the words, and nothing is created', async () => {
  const account = await makeAccount();
  await auth.set({ deny: true });
  const run = await connectWithCli([
    '--provider', 'custom', '--account', String(account.id), '--address', 'no@corp.test',
    '--client-id', CLIENT.id, '--client-secret', CLIENT.secret, '--auth-url', auth.authUrl, '--token-url', auth.tokenUrl, '--smtp', 'smtp://no%40corp.test@127.0.0.1:2525?tls=off',
  ]);
  expect(run.page.status).toBe(400);
  expect(run.code).toBe(1);
  expect(run.err).toContain('Consent refused');
  expect(await db().mailbox.count({ where: { accountId: account.id } })).toBe(0);
}, 90_000);
