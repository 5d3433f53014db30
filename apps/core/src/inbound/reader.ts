import type { ImapFlow } from 'imapflow';
import type { Mailbox } from '../../../../generated/prisma/client';
import { config } from '../config';
import type { Db } from '../db';
import { logger } from '../logger';
import { noteOutage } from '../outage';
import { imapSettings } from '../mailboxes';
import { imapAuth, refusedLogin } from '../oauth/imap';
import { MailboxNeedsReconnect } from '../oauth/tokens';
import { classify } from './classify';
import { handleInbound } from './handle';
import { lazy } from '../lazy';

/** imapflow (about 11 MB of a process's memory), loaded when the first mailbox with IMAP is read: most workers read none. */
const imapFlow = lazy(() => (require('imapflow') as typeof import('imapflow')).ImapFlow);

/**
 * The inbound reader of the worker (docs/inbound.md): one loop per mailbox with an `imap` URL. Each loop opens INBOX
 * read-only (EXAMINE; bodies fetched with BODY.PEEK: nothing is deleted, moved or flagged), reads the messages after its
 * cursor, hands each to handleInbound (exactly once, see handle.ts), then waits for IDLE's news or INBOX_POLL_SECONDS.
 * A failing mailbox (bad credentials, server down) records its error and retries with backoff; the others go on.
 */
export interface InboundReader {
  stop(): Promise<void>;
  /** how many mailbox loops run now */
  running(): number[];
}

const BACKOFF_MAX_MS = 300_000;
/** a new mailbox or a new UIDVALIDITY starts with the mail of the last days, not the whole history */
const FIRST_READ_DAYS = 2;

// an OAuth2 mailbox's loop starts again when it is reconnected (a new refresh token, its status back to active)
const fingerprint = (m: Mailbox) => `${m.imapHost}|${m.imapPort}|${m.imapSecure}|${m.imapUser}|${m.imapPasswordEnc}|${m.authType}|${m.authStatus}|${m.oauthRefreshTokenEnc ?? ''}`;

export function startInboundReader(db: Db, options: { refreshMs?: number } = {}): InboundReader {
  const loops = new Map<number, { key: string; stop: () => Promise<void> }>();
  const refreshMs = options.refreshMs ?? Math.min(config().inboxPollSeconds, 30) * 1000;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const refresh = async () => {
    try {
      const mailboxes = await db.mailbox.findMany({ where: { imapHost: { not: null } } });
      const seen = new Set<number>();
      for (const m of mailboxes) {
        seen.add(m.id);
        const current = loops.get(m.id);
        if (current?.key === fingerprint(m)) continue;
        if (current) await current.stop();
        if (stopped) return;
        loops.set(m.id, { key: fingerprint(m), stop: mailboxLoop(db, m) });
      }
      for (const [id, loop] of loops) {
        if (!seen.has(id)) {
          loops.delete(id);
          await loop.stop();
        }
      }
    } catch (err) {
      // Postgres away is the dependency watch's one line (outage.ts), not a stack a tick
      if (!noteOutage(err)) logger.warn({ err }, 'inbound: could not list mailboxes');
    }
    if (!stopped) timer = setTimeout(() => void refresh(), refreshMs);
  };
  void refresh();

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await Promise.all([...loops.values()].map((l) => l.stop()));
      loops.clear();
    },
    running: () => [...loops.keys()],
  };
}

async function setState(db: Db, id: number, state: string, error: string | null, checked = false): Promise<void> {
  await db.mailbox
    .updateMany({ where: { id }, data: { inboundState: state, inboundError: error, ...(checked ? { inboundCheckedAt: new Date() } : {}) } })
    .catch((err) => logger.warn({ err: (err as Error).message, mailbox: id }, 'inbound: could not record the state'));
}

/** Runs one mailbox until stopped; returns its stop function. */
function mailboxLoop(db: Db, mailbox: Mailbox): () => Promise<void> {
  let stopped = false;
  let client: ImapFlow | undefined;
  let wake: (() => void) | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  const run = async () => {
    let failures = 0;
    // an OAuth2 access token the server refused: the next login asks for a fresh one
    let rejected: string | undefined;
    while (!stopped) {
      try {
        const settings = imapSettings(mailbox)!;
        if (mailbox.authStatus === 'needs_reconnect') {
          // nothing to try until someone reconnects it (a new fingerprint starts a new loop)
          await setState(db, mailbox.id, 'error', 'the mailbox needs reconnecting (docs/mailboxes.md)', true);
          return;
        }
        const auth = await imapAuth(db, mailbox, settings, rejected);
        rejected = undefined;
        client = new (imapFlow())({
          host: settings.host,
          port: settings.port,
          secure: settings.secure,
          auth,
          logger: false,
          emitLogs: false,
          connectionTimeout: 30_000,
          greetingTimeout: 15_000,
        });
        client.on('error', (err: Error) => logger.warn({ err, mailbox: mailbox.id }, 'inbound: connection error'));
        client.on('exists', () => wake?.());
        client.on('close', () => wake?.());
        await client.connect();
        const box = await client.mailboxOpen('INBOX', { readOnly: true });
        const idle = client.capabilities.has('IDLE');
        failures = 0;
        await setState(db, mailbox.id, idle ? 'idle' : 'polling', null);
        const uidValidity = BigInt(box.uidValidity);
        while (!stopped && client.usable) {
          await readNew(db, client, mailbox, uidValidity);
          await setState(db, mailbox.id, idle ? 'idle' : 'polling', null, true);
          if (stopped) break;
          // imapflow IDLEs by itself between commands where the server can: `exists` wakes us at once
          await sleep(config().inboxPollSeconds * 1000);
        }
      } catch (err) {
        if (stopped) break;
        if (err instanceof MailboxNeedsReconnect) {
          await setState(db, mailbox.id, 'error', err.message.slice(0, 500), true);
          return;
        }
        const token = (client?.options as { auth?: { accessToken?: string } } | undefined)?.auth?.accessToken;
        if (token && refusedLogin(err)) rejected = token;
        failures += 1;
        const message = err instanceof Error ? (err as Error & { responseText?: string }).responseText || err.message : String(err);
        logger.warn({ err, mailbox: mailbox.id, failures }, 'inbound: mailbox failed, retrying');
        await setState(db, mailbox.id, 'error', message.slice(0, 500), true);
      } finally {
        const c = client;
        client = undefined;
        await c?.logout().catch(() => c.close());
      }
      if (!stopped && failures) await sleep(Math.min(BACKOFF_MAX_MS, 1000 * 2 ** Math.min(failures - 1, 9)));
    }
  };
  const done = run();
  return async () => {
    stopped = true;
    wake?.();
    const c = client;
    await c?.logout().catch(() => c.close());
    await done;
  };
}

/** The cursor of this UIDVALIDITY; a new one (or none yet) starts at the mail of the last FIRST_READ_DAYS. */
async function cursorFor(db: Db, client: ImapFlow, mailboxId: number, uidValidity: bigint): Promise<bigint> {
  const current = await db.inboundCursor.findUnique({ where: { mailboxId } });
  if (current && current.uidValidity === uidValidity) return current.lastUid;
  const since = new Date(Date.now() - FIRST_READ_DAYS * 86_400_000);
  const recent = (await client.search({ since }, { uid: true })) || [];
  const start = BigInt(recent.length ? Math.min(...recent) - 1 : 0);
  if (current) logger.info({ mailbox: mailboxId, was: String(current.uidValidity), now: String(uidValidity) }, 'inbound: new UIDVALIDITY, cursor reset');
  // two readers may both start it: the first write wins, the other's is the same
  await db.inboundCursor.upsert({
    where: { mailboxId },
    create: { mailboxId, uidValidity, lastUid: start },
    update: current ? { uidValidity, lastUid: start } : {},
  });
  const after = await db.inboundCursor.findUniqueOrThrow({ where: { mailboxId } });
  return after.uidValidity === uidValidity ? after.lastUid : start;
}

async function readNew(db: Db, client: ImapFlow, mailbox: Mailbox, uidValidity: bigint): Promise<void> {
  const last = await cursorFor(db, client, mailbox.id, uidValidity);
  const batch: { uid: number; source: Buffer }[] = [];
  // `uid` fetch of source uses BODY.PEEK[]: the \Seen flag is not set (and the folder is open read-only anyway)
  for await (const msg of client.fetch(`${last + 1n}:*`, { uid: true, source: true }, { uid: true })) {
    if (BigInt(msg.uid) > last && msg.source) batch.push({ uid: msg.uid, source: msg.source });
  }
  batch.sort((a, b) => a.uid - b.uid);
  for (const { uid, source } of batch) {
    const mail = await classify(source);
    const handled = await handleInbound(db, { mailbox, uidValidity, uid: BigInt(uid), raw: source }, mail);
    if (handled) logger.info({ mailbox: mailbox.id, uid, kind: handled.kind, prospect: handled.prospectId }, 'inbound: handled');
  }
}
