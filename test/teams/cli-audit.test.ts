import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeTenant, type Tenant } from '../helpers/factories';
import { runTs, terminate } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/**
 * Every change `npm run admin` makes writes an audit entry (docs/teams.md), `via: cli` with the admin token as actor:
 * each command its help lists is run here as a real process, a changing one with arguments it accepts. A command added
 * to the help without a run (or a reason) here fails the first test; a changing one that writes no entry, the second.
 */
jest.setTimeout(600_000);

const ctx = useApi();
useDns(['test']);

/** Commands that change nothing, and the one that waits for a person's sign-in at a provider. */
const READS = new Set([
  'account list', 'mailbox test', 'mailbox list', 'key list', 'list show', 'list list', 'subscribers', 'subscribers export', 'subscriber consent',
  'import show', 'suppressions', 'stop-list', 'campaign stats', 'messages', 'messages search', 'message show', 'prospects', 'webhook list',
  'webhook deliveries', 'template list', 'template show', 'template versions', 'template preview', 'broadcast show', 'broadcast list',
  'domain list', 'domain show', 'tracking-domain list', 'tracking-domain show', 'route list',
]);
/** Changes whose entry is checked where a provider's sign-in can be driven. */
const CHECKED_ELSEWHERE = new Set(['mailbox connect' /* test/oauth/cli-connect.test.ts */]);

interface Fixture {
  tenant: Tenant;
  dir: string;
  ids: Record<string, string>;
}

const file = (f: Fixture, name: string, text: string) => {
  const at = path.join(f.dir, name);
  fs.writeFileSync(at, text);
  return at;
};

/** The changing commands, in an order where each finds what the earlier ones made. */
const CHANGES: [string, (f: Fixture) => string[]][] = [
  ['account create', () => ['--name', `cli ${randomUUID()}`]],
  ['mailbox create', (f) => ['--account', String(f.tenant.account.id), '--address', 'cli@example.com', '--smtp', 'smtp://u:p@127.0.0.1:2525']],
  ['mailbox set', (f) => [String(f.tenant.mailbox.id), '--name', 'Renamed']],
  ['key create', (f) => ['--account', String(f.tenant.account.id), '--name', 'cli', '--mailbox', String(f.tenant.mailbox.id), '--daily-limit', '5']],
  ['list create', (f) => ['--account', String(f.tenant.account.id), '--name', 'cli', '--mailbox', String(f.tenant.mailbox.id), '--no-confirm']],
  ['list set', (f) => [f.ids.list!, '--name', 'cli, renamed']],
  ['campaign create', (f) => ['--account', String(f.tenant.account.id), '--name', 'cli', '--goal', 'sales', '--mailbox', String(f.tenant.mailbox.id), '--steps', file(f, 'steps.json', JSON.stringify([{ subject: 'Hi', body: 'Hello', delay_hours: 0 }]))]],
  ['campaign set', (f) => [f.ids.campaign!, '--name', 'cli, renamed']],
  ['message retry', (f) => [f.ids.failed!]],
  ['message cancel', (f) => [f.ids.queued!]],
  ['suppressions remove', (f) => [f.ids.suppression!]],
  ['stop-list remove', (f) => [f.ids.stop!]],
  ['webhook create', (f) => ['--account', String(f.tenant.account.id), '--url', 'https://hooks.example.com/cli']],
  ['webhook set', (f) => [f.ids.webhook!, '--disable']],
  ['webhook rotate', (f) => [f.ids.webhook!]],
  ['webhook delete', (f) => [f.ids.webhook!]],
  ['template create', (f) => ['--account', String(f.tenant.account.id), '--name', 'cli', '--subject', 'Hi', '--text-file', file(f, 'text.txt', 'Hello')]],
  ['template set', (f) => [f.ids.template!, '--subject', 'Hello']],
  ['template restore', (f) => [f.ids.template!, '--version', '1']],
  ['template test', (f) => [f.ids.template!, '--to', 'tester@example.com']],
  ['template delete', (f) => [f.ids.template!]],
  ['broadcast create', (f) => ['--list', f.ids.list!, '--subject', 'News', '--text', file(f, 'news.txt', 'Hello')]],
  ['broadcast set', (f) => [f.ids.broadcast!, '--subject', 'News, again']],
  ['domain add', (f) => ['--account', String(f.tenant.account.id), '--name', 'cli.test']],
  ['domain verify', (f) => [f.ids.domain!]],
  ['domain rotate', (f) => [f.ids.domain!]],
  ['route add', (f) => ['--account', String(f.tenant.account.id), '--domain', f.ids.domain!, '--match', 'in', '--action', 'hold']],
  ['route remove', (f) => [f.ids.route!]],
  ['tracking-domain add', (f) => ['--account', String(f.tenant.account.id), '--name', 'links.cli.test']],
  ['tracking-domain verify', (f) => [f.ids.tracking!]],
  ['tracking-domain remove', (f) => [f.ids.tracking!]],
  ['domain remove', (f) => [f.ids.domain!]],
  ['key revoke', (f) => [String(f.tenant.keyId)]],
];
/** `import FILE --list LIST` waits for a worker to apply the import: its entry is written before it waits. */
const IMPORT = 'import';

/** `npm run admin -- ...args` as a real process, stopped (and failed) when it has not ended within a minute. */
async function runAdmin(...args: string[]): Promise<{ code: number | null; out: Record<string, { id?: number | string }>; err: string }> {
  const proc = runTs('scripts/admin.ts', args);
  const timer = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 60_000).unref());
  const code = await Promise.race([proc.exited, timer]);
  if (code === 'hung') {
    await terminate(proc.child);
    throw new Error(`${args.slice(0, 2).join(' ')}: still running after a minute (${proc.stdout()}${proc.stderr()})`);
  }
  return { code, out: code === 0 ? JSON.parse(proc.stdout()) : undefined, err: proc.stderr() };
}

/** What a command printed that later commands name. */
function remember(command: string, out: Record<string, { id?: number | string }>, f: Fixture): void {
  const made: Record<string, string> = { 'list create': 'list', 'campaign create': 'campaign', 'webhook create': 'webhook', 'template create': 'template', 'broadcast create': 'broadcast', 'domain add': 'domain', 'route add': 'route', 'tracking-domain add': 'tracking' };
  const name = made[command];
  if (name) f.ids[name] = String(Object.values(out).find((v) => v && typeof v === 'object' && 'id' in v)!.id);
}

/** The commands the CLI's help lists ("message show|retry|cancel ID" is three). */
async function listedCommands(): Promise<string[]> {
  const help = await runTs('scripts/admin.ts', ['--help']);
  await help.exited;
  const commands = new Set<string>();
  for (const line of help.stdout().split('\n')) {
    const m = /^ {2}([a-z][a-z-]*)(?: ([a-z][a-z|-]*)(?=\s|$))?/.exec(line);
    if (!m) continue;
    for (const action of (m[2] ?? '').split('|')) commands.add(action ? `${m[1]} ${action}` : m[1]!);
  }
  return [...commands].sort();
}

it('has a run, or a reason, for every command the help lists', async () => {
  const listed = await listedCommands();
  expect(listed.length).toBeGreaterThan(60);
  const known = new Set([...CHANGES.map(([c]) => c), IMPORT, ...READS, ...CHECKED_ELSEWHERE]);
  expect(listed.filter((c) => !known.has(c))).toEqual([]);
  expect([...known].filter((c) => !listed.includes(c))).toEqual([]);
});

it('writes one entry, via cli, as the admin token, for every change a command makes', async () => {
  const tenant = await makeTenant();
  const send = (to: string) => asAdmin(ctx.api).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send({ from: tenant.mailbox.address, to, subject: 'one', text: 'x' }).expect(202);
  await send('someone@example.com');
  await send('other@example.com');
  const messageTo = (to: string) => db().message.findFirstOrThrow({ where: { accountId: tenant.account.id, to } });
  const [queued, failed] = [await messageTo('someone@example.com'), await messageTo('other@example.com')];
  await db().message.update({ where: { id: failed.id }, data: { status: 'failed' } });
  const suppression = await db().suppression.create({ data: { accountId: tenant.account.id, email: 'gone@example.com', reason: 'bounced' } });
  const stop = await db().stopEntry.create({ data: { accountId: tenant.account.id, value: 'stop.example.com', kind: 'domain' } });
  const f: Fixture = { tenant, dir: fs.mkdtempSync(path.join(os.tmpdir(), 'cli-audit-')), ids: { queued: queued.id, failed: failed.id, suppression: String(suppression.id), stop: String(stop.id) } };
  const cliEntries = () => db().auditEntry.findMany({ where: { via: 'cli' }, orderBy: { id: 'asc' } });

  const missing: string[] = [];
  for (const [command, args] of CHANGES) {
    if (command === 'route add') await db().domain.update({ where: { id: Number(f.ids.domain) }, data: { status: 'verified', inbound: true } });
    const before = (await cliEntries()).length;
    const run = await runAdmin(...command.split(' '), ...args(f));
    if (run.code !== 0) throw new Error(`${command}: ${run.err}`);
    remember(command, run.out, f);
    const entries = (await cliEntries()).slice(before);
    if (entries.length !== 1) missing.push(`${command}: ${entries.length} entries`);
    else expect(entries[0]).toMatchObject({ actorKind: 'admin-token', actorLabel: 'admin token' });
  }

  // the import: its entry once its lines are stored, before it waits for a worker to apply them
  const before = (await cliEntries()).length;
  const proc = runTs('scripts/admin.ts', ['import', file(f, 'people.csv', 'email,name\nimported@example.com,I\n'), '--list', f.ids.list!]);
  try {
    const [entry] = await waitFor(async () => ((await cliEntries()).slice(before).length ? (await cliEntries()).slice(before) : null), { timeout: 60_000, what: 'the import entry' });
    expect(entry).toMatchObject({ action: 'import', resource: 'list', resourceId: f.ids.list });
  } finally {
    await terminate(proc.child);
  }
  expect(missing).toEqual([]);
});
