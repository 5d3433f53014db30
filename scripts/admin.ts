/**
 * `npm run admin -- <resource> <action> [--flags]`: the admin API's operations from a shell, over the same core services
 * and validation. Answers are printed as JSON. Run without arguments for help.
 */
// first: the Prisma client regenerated if schema.prisma changed, before the imports below load it
import './fresh-client';
import { consentExport } from '../apps/core/src/consent/ledger';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { accountInput } from '../apps/core/src/accounts/schema';
import { keyInput } from '../apps/core/src/auth/schema';
import { entriesQuery } from '../apps/core/src/keyset';
import { mailboxChange as mailboxChangeRules, mailboxInput } from '../apps/core/src/mailboxes/schema';
import { campaignChanges, campaignInput } from '../apps/core/src/outreach/schema';
import { messagesQuery } from '../apps/core/src/sending/schema';
import { listChanges, listInput, subscribersQuery } from '../apps/core/src/subscribers/schema';
import { closeDb, db, type Db } from '../apps/core/src/db';
import { baselineWasmOnly } from '../apps/core/src/short-lived';
import { AppError } from '../apps/core/src/errors';
import { closeQueues } from '../apps/core/src/queues';
import { closeRedis } from '../apps/core/src/redis';
import { createAccountAudited, listAccounts } from '../apps/core/src/accounts';
import { campaignChange, creation, listChange, mailboxChange, stopEntryDeletion, suppressionDeletion } from '../apps/core/src/changes';
import { CLI_AUDIT, cliChange } from './admin-audit';
import { changeCampaign, createCampaign } from '../apps/core/src/outreach/campaigns';
import { createKeyAudited, listKeys, revokeKeyEverywhere } from '../apps/core/src/auth/keys';
import { changeList, createList, getList, listLists, listRef } from '../apps/core/src/subscribers/lists';
import { writeSubscribersCsv } from '../apps/core/src/subscribers/csv';
import { deleteStopEntry, listStopEntries } from '../apps/core/src/stop-list/entries';
import { deleteSuppression, listSuppressions } from '../apps/core/src/suppressions';
import { browseSubscribers } from '../apps/core/src/subscribers/browse';
import { createMailboxAudited, listMailboxes } from '../apps/core/src/mailboxes';
import { updateMailbox } from '../apps/core/src/mailbox-settings';
import { testMailbox } from '../apps/core/src/mailbox-settings/connection';
import { listMessages } from '../apps/core/src/sending/messages';
import { migrate } from '../apps/core/src/migrate';
import { config } from '../apps/core/src/config';
import { accountQuery, idParam, validate } from '../apps/core/src/validate';
import { WEBHOOK_HELP, webhookCommand, webhookOptions } from './admin-webhooks';
import { TEMPLATE_HELP, templateCommand, templateOptions } from './admin-templates';
import { DOMAIN_HELP, domainCommand } from './admin-domains';
import { TRACKING_DOMAIN_HELP, trackingDomainCommand } from './admin-tracking-domains';
import { ROUTE_HELP, routeCommand, routeOptions } from './admin-routes';
import { BROADCAST_HELP, broadcastOptions, mailboxExtras, runBroadcastCommand } from './admin-broadcasts';
import { IMPORT_HELP, importCommand, importOptions } from './admin-import';
import { campaignOutreach, mailboxOutreach, OUTREACH_HELP, outreachOptions } from './admin-outreach';
import { MESSAGES_HELP, messagesCommand, messagesOptions } from './admin-messages';
import { campaignStats } from '../apps/core/src/outreach/stats';
import { mailboxConnect, OAUTH_HELP, oauthOptions } from './admin-oauth';

const HELP = `usage: npm run admin -- <command> [options]

  account create --name NAME
  account list
  mailbox create --account ID --address ADDRESS --smtp smtp://user:pass@host:587 [--name NAME] [--daily-limit N] [--gap-seconds N] [--imap imaps://user:pass@host:993]
  mailbox set ID [--smtp URL] [--name NAME] [--daily-limit N] [--gap-seconds N] [--imap URL]
                                   (an empty --imap turns inbound reading off; DKIM and pacing flags below)
  mailbox test ID                  (tries SMTP, and IMAP when set, with the mailbox's login; nothing is sent)
  mailbox list
${OAUTH_HELP.trimEnd()}
  key create --account ID --name NAME --mailbox ID --daily-limit N [--prospects] [--test]     (prints the token once; --test: an ms_test_ sandbox key)
  key list
  key revoke ID
  list create --account ID --name NAME --mailbox ID [--no-confirm] [--steps FILE.json]
  list set LIST [--name NAME] [--mailbox ID] [--confirm | --no-confirm] [--steps FILE.json]
                                   (--steps: the welcome series, [{subject, html?, text?, template?, delay_hours}]; [] removes it)
  list show LIST                   (LIST, here and below: a list's id or its key, both as list show prints them)
  list list --account ID
  subscribers LIST [--status S] [--q TEXT] [--after ID] [--limit N]     (a page; --after the "next" it printed)
  subscribers export LIST [--status S] > list.csv                      (every subscriber, as CSV)
  subscriber consent ID                                                (what is held on a subscriber and their consent ledger, docs/preferences.md)
${IMPORT_HELP}
  suppressions --account ID [--after ID] [--limit N]
  suppressions remove ID
  stop-list --account ID [--after ID] [--limit N]
  stop-list remove ID
  campaign create --account ID --name NAME --goal GOAL (--mailbox ID | --mailboxes ID,ID,...) --steps FILE.json [--stages a,b,c] [--status draft|running|paused]
           [--target URL [--anchor TEXT]]     (links campaigns: the page the placed link must point to)
  campaign set ID [--status S] [--name NAME] [--mailboxes ID,ID,...] [--steps FILE.json] [--stages a,b,c] [--target URL [--anchor TEXT] | --no-target]
  messages [--to ADDRESS] [--limit N]
${MESSAGES_HELP}
${OUTREACH_HELP}
${WEBHOOK_HELP}
${TEMPLATE_HELP}
${BROADCAST_HELP}
${DOMAIN_HELP}${TRACKING_DOMAIN_HELP}${ROUTE_HELP}`;

const options = {
  name: { type: 'string' },
  account: { type: 'string' },
  address: { type: 'string' },
  smtp: { type: 'string' },
  imap: { type: 'string' },
  mailbox: { type: 'string' },
  mailboxes: { type: 'string' },
  'daily-limit': { type: 'string' },
  'gap-seconds': { type: 'string' },
  prospects: { type: 'boolean' },
  test: { type: 'boolean' },
  'no-confirm': { type: 'boolean' },
  confirm: { type: 'boolean' },
  q: { type: 'string' },
  after: { type: 'string' },
  goal: { type: 'string' },
  steps: { type: 'string' },
  stages: { type: 'string' },
  status: { type: 'string' },
  to: { type: 'string' },
  limit: { type: 'string' },
  target: { type: 'string' },
  anchor: { type: 'string' },
  'no-target': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  ...webhookOptions,
  ...routeOptions,
  ...templateOptions,
  ...broadcastOptions,
  ...importOptions,
  ...outreachOptions,
  ...messagesOptions,
  ...oauthOptions,
} as const;

type Flags = Partial<Record<keyof typeof options, string | boolean>>;

/** What a command answers when it printed its own output (the CSV export). */
const RAW = Symbol('raw');

/**
 * Refusals in the CLI's words: the fields the admin API names ("daily_limit") are the flags here (--daily-limit), and
 * the id is the number after the command.
 */
export function inCliWords(message: string): string {
  return message.replace(/^"?([a-z][a-z_]*)"?(?=[ :.[])/, (whole, field: string) => {
    if (field === 'id') return 'the ID after the command';
    const flag = field.replace(/_/g, '-');
    return flag in options ? `--${flag}` : whole;
  });
}

const stepsFrom = (file: unknown) => (typeof file === 'string' ? JSON.parse(fs.readFileSync(file, 'utf8')) : undefined);
const targetFrom = (flags: Flags) =>
  flags['no-target'] ? null : typeof flags.target === 'string' ? { url: flags.target, anchor: flags.anchor } : undefined;
const stagesFrom = (list: unknown) => (typeof list === 'string' ? list.split(',').map((s) => s.trim()).filter(Boolean) : undefined);
/** `--mailboxes 3,4,5`: a campaign's rotation (docs/campaigns.md) */
const mailboxesFrom = (list: unknown) => (typeof list === 'string' ? list.split(',').map((s) => s.trim()).filter(Boolean) : undefined);

async function run(command: string[], flags: Flags): Promise<unknown> {
  const [resource, action, arg] = command;
  const d = db();
  if (resource === 'webhook') return webhookCommand(d, action, arg, flags);
  if (resource === 'template') return templateCommand(d, action, arg, flags);
  if (resource === 'domain') return domainCommand(d, action, arg, flags);
  if (resource === 'tracking-domain') return trackingDomainCommand(d, action, arg, flags);
  if (resource === 'route') return routeCommand(d, action, arg, flags);
  if (resource === 'import') return importCommand(d, action, arg, flags);
  if (resource === 'mailbox' && action === 'connect') return mailboxConnect(d, flags);
  const page = { after: flags.after, limit: flags.limit };
  if (resource === 'subscribers' && action !== 'export') {
    const list = await listRef(d, action);
    const query = validate<{ status?: 'active'; q?: string; after?: number; limit: number }>(subscribersQuery, { status: flags.status, q: flags.q, ...page });
    const found = await browseSubscribers(d, list.id, { status: query.status, search: query.q, after: query.after, limit: query.limit });
    return { subscribers: found.rows, next: found.next === null ? null : Number(found.next) };
  }
  if (resource === 'suppressions' && action === undefined) return listSuppressions(d, validate(entriesQuery, { account: flags.account, ...page }));
  if (resource === 'stop-list' && action === undefined) return listStopEntries(d, validate(entriesQuery, { account: flags.account, ...page }));
  switch (`${resource} ${action ?? ''}`.trim()) {
    case 'account create':
      return { account: await createAccountAudited(d, validate(accountInput, { name: flags.name }), CLI_AUDIT) };
    case 'account list':
      return { accounts: await listAccounts(d) };
    case 'mailbox create':
      return {
        mailbox: await createMailboxAudited(
          d,
          validate(mailboxInput, {
            account: flags.account,
            address: flags.address,
            name: flags.name,
            smtp: flags.smtp,
            daily_limit: flags['daily-limit'],
            gap_seconds: flags['gap-seconds'],
            imap: flags.imap,
            ...mailboxExtras(flags),
            ...mailboxOutreach(flags),
          }),
          CLI_AUDIT,
        ),
      };
    case 'mailbox set': {
      const change = { name: flags.name, smtp: flags.smtp, daily_limit: flags['daily-limit'], gap_seconds: flags['gap-seconds'], imap: flags.imap, ...mailboxExtras(flags), ...mailboxOutreach(flags) };
      const id = validate(idParam, arg);
      const input = validate(mailboxChangeRules, change);
      return { mailbox: await cliChange(d, mailboxChange(id), (db: Db) => updateMailbox(db, id, input)) };
    }
    case 'mailbox test': {
      const { smtp, imap } = await testMailbox(d, validate(idParam, arg));
      return { smtp, imap };
    }
    case 'mailbox list':
      return { mailboxes: await listMailboxes(d) };
    case 'key create': {
      const input = validate(keyInput, {
        account: flags.account,
        name: flags.name,
        mailbox: flags.mailbox,
        daily_limit: flags['daily-limit'],
        prospects: flags.prospects ?? false,
        mode: flags.test ? 'test' : 'live',
      });
      const { key, token } = await createKeyAudited(d, input, CLI_AUDIT);
      return { key: { ...key, token }, note: 'the token is shown once: store it now' };
    }
    case 'key list':
      return { keys: await listKeys(d) };
    case 'key revoke':
      return { key: await revokeKeyEverywhere(d, validate(idParam, arg), CLI_AUDIT) };
    case 'list create': {
      const input = validate(listInput, { account: flags.account, name: flags.name, mailbox: flags.mailbox, confirm: !flags['no-confirm'], steps: stepsFrom(flags.steps) });
      return { list: await cliChange(d, creation('list', input.account), (db: Db) => createList(db, input)) };
    }
    case 'campaign create': {
      const input = validate(campaignInput, {
            account: flags.account,
            name: flags.name,
            goal: flags.goal,
            mailbox: flags.mailbox,
            mailboxes: mailboxesFrom(flags.mailboxes),
            steps: stepsFrom(flags.steps),
            stages: stagesFrom(flags.stages),
            status: flags.status,
            target: targetFrom(flags),
            ...campaignOutreach(flags),
          });
      return { campaign: await cliChange(d, creation('campaign', input.account), (db: Db) => createCampaign(db, input)) };
    }
    case 'campaign set': {
      const id = validate(idParam, arg);
      const changes = validate(campaignChanges, {
        status: flags.status,
        name: flags.name,
        mailboxes: mailboxesFrom(flags.mailboxes),
        steps: stepsFrom(flags.steps),
        stages: stagesFrom(flags.stages),
        target: targetFrom(flags),
        ...campaignOutreach(flags),
      });
      return { campaign: await cliChange(d, campaignChange(id), (db: Db) => changeCampaign(db, id, changes)) };
    }
    case 'campaign stats':
      return { stats: await campaignStats(d, validate(idParam, arg)) };
    case 'list set': {
      const confirm = flags.confirm ? true : flags['no-confirm'] ? false : undefined;
      const changes = validate(listChanges, { name: flags.name, mailbox: flags.mailbox, confirm, steps: stepsFrom(flags.steps) });
      const id = (await listRef(d, arg)).id;
      return { list: await cliChange(d, listChange(id), (db: Db) => changeList(db, id, changes)) };
    }
    case 'list show':
      return { list: await getList(d, (await listRef(d, arg)).id) };
    case 'list list':
      return { lists: await listLists(d, validate(accountQuery, { account: flags.account }).account) };
    case 'subscribers export': {
      const list = await listRef(d, arg);
      const { status } = validate<{ status?: 'active' }>(subscribersQuery, { status: flags.status });
      await writeSubscribersCsv(d, list.id, process.stdout, { status });
      return RAW;
    }
    case 'subscriber consent':
      return consentExport(d, validate(idParam, arg));
    case 'suppressions remove': {
      const id = validate(idParam, arg);
      await cliChange(d, suppressionDeletion(id), (db: Db) => deleteSuppression(db, id));
      return {};
    }
    case 'stop-list remove': {
      const id = validate(idParam, arg);
      await cliChange(d, stopEntryDeletion(id), (db: Db) => deleteStopEntry(db, id));
      return {};
    }
    case 'messages':
      return { messages: await listMessages(d, validate(messagesQuery, { to: flags.to, limit: flags.limit })) };
    default: {
      const operator = await messagesCommand(d, `${resource} ${action ?? ''}`.trim(), arg, flags);
      if (operator !== undefined) return operator;
      const answer = await runBroadcastCommand(d, `${resource} ${action ?? ''}`.trim(), arg, flags);
      if (answer !== undefined) return answer;
      throw new AppError(`unknown command "${command.join(' ')}"\n\n${HELP}`);
    }
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ options, allowPositionals: true, strict: true });
  if (values.help || positionals.length === 0) {
    process.stdout.write(HELP);
    return;
  }
  baselineWasmOnly();
  await migrate(config().directDatabaseUrl);
  try {
    const answer = await run(positionals, values as Flags);
    if (answer !== RAW) process.stdout.write(JSON.stringify({ ok: true, ...(answer as object) }, null, 2) + '\n');
  } catch (err) {
    process.stderr.write(JSON.stringify({ ok: false, error: inCliWords((err as Error).message) }) + '\n');
    process.exitCode = 1;
  } finally {
    // a change that queued a job (a retried message, a campaign's due steps) opened a queue: its connection would hold
    // the process open
    await closeQueues();
    await closeRedis();
    await closeDb();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`admin: ${err.message}\n`);
  process.exit(1);
});
