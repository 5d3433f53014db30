import fs from 'node:fs';
import { broadcastChanges, broadcastInput, broadcastsQuery } from '../apps/core/src/broadcasts/schema';
import { changeBroadcast, createBroadcast, getBroadcast, listBroadcasts } from '../apps/core/src/broadcasts/service';
import type { Db } from '../apps/core/src/db';
import { broadcastChange, broadcastCreation } from '../apps/core/src/changes';
import { cliChange } from './admin-audit';
import { closeQueues } from '../apps/core/src/queues';
import { idParam, validate } from '../apps/core/src/validate';
import { listRef } from '../apps/core/src/subscribers/lists';

/** The CLI's broadcast commands and the mailbox options for broadcasts (DKIM, pacing), kept apart from admin.ts. */
export const BROADCAST_HELP = `  mailbox create ... [--dkim-domain D --dkim-selector S --dkim-key FILE.pem] [--max-per-second N]
  mailbox set ID [--dkim-domain D --dkim-selector S --dkim-key FILE.pem | --no-dkim] [--max-per-second N]
  mailbox create|set ... [--return-path address|verp]   (VERP envelope senders, docs/inbound.md)
  broadcast create --list LIST --subject S [--html FILE] [--text FILE] [--tags a,b] [--send-at ISO]
  broadcast set ID [--status sending|paused|cancelled] [--subject S] [--html FILE] [--text FILE] [--tags a,b] [--send-at ISO]
  broadcast show ID
  broadcast list [--list LIST]
`;

export const broadcastOptions = {
  list: { type: 'string' },
  subject: { type: 'string' },
  html: { type: 'string' },
  text: { type: 'string' },
  tags: { type: 'string' },
  'send-at': { type: 'string' },
  'dkim-domain': { type: 'string' },
  'dkim-selector': { type: 'string' },
  'dkim-key': { type: 'string' },
  'no-dkim': { type: 'boolean' },
  'max-per-second': { type: 'string' },
  'return-path': { type: 'string' },
} as const;

type Flags = Partial<Record<string, string | boolean>>;

const file = (name: unknown) => (typeof name === 'string' ? fs.readFileSync(name, 'utf8') : undefined);

/** `dkim`, `max_per_second` and `return_path` of `mailbox create` / `mailbox set` from the flags. */
export function mailboxExtras(flags: Flags) {
  const dkim = flags['no-dkim']
    ? null
    : flags['dkim-domain'] || flags['dkim-selector'] || flags['dkim-key']
      ? { domain: flags['dkim-domain'], selector: flags['dkim-selector'], private_key: file(flags['dkim-key']) }
      : undefined;
  return { dkim, max_per_second: flags['max-per-second'], return_path: flags['return-path'] };
}

function content(flags: Flags) {
  return {
    subject: flags.subject,
    html: file(flags.html),
    text: file(flags.text),
    tags: typeof flags.tags === 'string' ? flags.tags.split(',').map((t) => t.trim()).filter(Boolean) : undefined,
    send_at: flags['send-at'],
  };
}

/** Runs a broadcast command; undefined when the command is not one of these. */
export async function runBroadcastCommand(d: Db, command: string, arg: string | undefined, flags: Flags): Promise<unknown> {
  switch (command) {
    case 'broadcast create': {
      const input = validate(broadcastInput, { list: flags.list === undefined ? undefined : (await listRef(d, flags.list)).key, ...content(flags) });
      return { broadcast: await cliChange(d, broadcastCreation(input.list), (db: Db) => createBroadcast(db, input)) };
    }
    case 'broadcast set':
      try {
        const id = validate(idParam, arg);
        const changes = validate(broadcastChanges, { status: flags.status, ...content(flags) });
        return { broadcast: await cliChange(d, broadcastChange(id), (db: Db) => changeBroadcast(db, id, changes)) };
      } finally {
        await closeQueues();
      }
    case 'broadcast show':
      return { broadcast: await getBroadcast(d, validate(idParam, arg)) };
    case 'broadcast list':
      return { broadcasts: await listBroadcasts(d, validate(broadcastsQuery, { list: flags.list === undefined ? undefined : (await listRef(d, flags.list)).key })) };
    default:
      return undefined;
  }
}
