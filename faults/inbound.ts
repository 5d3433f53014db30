/**
 * The fault suite's inbound scenario (faults/run.ts): replies read from a real dovecot INBOX become `message.received`
 * events (docs/inbound-events.md), exactly one per email, while the worker is SIGKILLed and Redis is lost in the middle
 * of the read. Counted three ways: event rows by the email they name, webhook posts by `webhook-id`, and the emails read.
 */
import { Dovecot } from '../test/helpers/dovecot';
import type { Kit, TopologyScenario, WorldLike } from './kit';
import { adminClient, query, webhookReceiver, type Receiver } from './webhooks';

const REPLIES = 100;
const USER = 'inbox@faults.test';
const PASS = 'faults-pass';
/** after every event arrived: long enough for a second event of one email, or a retry, to show up */
const SECOND_POST_WINDOW_MS = 10_000;

interface InboundWorld extends WorldLike {
  redis: { kill: () => Promise<void>; start: () => Promise<void> };
  account: number;
  mailbox: number;
}

function reply(i: number): string {
  return [
    `From: Reader ${i} <reader${i}@example.org>`,
    `To: ${USER}`,
    `Subject: Re: our note ${i}`,
    `Message-ID: <reply-${i}@example.org>`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `Reply number ${i}.`,
    '',
  ].join('\r\n');
}

export function inboundScenarios<W extends WorldLike, A, D>(kit: Kit<W, A, D>): Record<string, TopologyScenario<W>> {
  let dove: Dovecot | undefined;
  let hooks: Receiver | undefined;
  return {
    'inbound-events-restart': {
      apis: 1,
      workers: 1,
      // the scenario starts its worker once the mailbox reads dovecot
      drainFirst: true,
      async setup() {
        dove = new Dovecot();
        await dove.start({ [USER]: PASS });
        hooks = await webhookReceiver();
      },
      async teardown() {
        await hooks?.close();
        await dove?.stop();
        hooks = undefined;
        dove = undefined;
      },
      async run(plain) {
        const world = plain as unknown as InboundWorld;
        const admin = adminClient(world.apis[0]!.port);
        await admin('POST', '/webhooks', { account: world.account, url: hooks!.url, events: ['message.received'] });
        await admin('PATCH', `/mailboxes/${world.mailbox}`, { imap: dove!.url(USER, PASS) });
        const read = async () => (await query<{ n: number }>(world, 'SELECT count(*)::int AS n FROM inbound_messages', []))[0]!.n;

        // the replies arrive while the worker reads them (IDLE wakes it for each)
        plain.startWorker();
        await kit.until(async () => (await query<{ state: string }>(world, 'SELECT inbound_state AS state FROM mailboxes WHERE id = $1', [world.mailbox]))[0]?.state === 'idle', 60_000, 'the reader to connect');
        const client = dove!.client(USER, PASS);
        await client.connect();
        let appended = 0;
        const appending = (async () => {
          for (let i = 1; i <= REPLIES; i++) {
            await client.append('INBOX', reply(i));
            appended = i;
          }
        })();
        // mid-read: the worker SIGKILLed and Redis lost together
        await kit.until(async () => (await read()) >= 30, 60_000, 'the first replies read', 20);
        const atKill = await read();
        world.workers[0]!.child.kill('SIGKILL');
        await world.redis.kill();
        const appendedAtKill = appended;
        kit.log('inbound: worker killed and redis lost with', atKill, 'of', REPLIES, 'replies read,', appendedAtKill, 'appended');
        await appending;
        await client.logout();
        await kit.sleep(3_000);
        await world.redis.start();
        plain.startWorker();
        const back = Date.now();

        const counts = async () =>
          (
            await query<{ events: number; emails: number; read: number }>(
              world,
              `SELECT (SELECT count(*)::int FROM events WHERE type = 'message.received') AS events,
                      (SELECT count(DISTINCT data->>'id')::int FROM events WHERE type = 'message.received') AS emails,
                      (SELECT count(*)::int FROM inbound_messages) AS read`,
              [],
            )
          )[0]!;
        let drainMs: number | null = null;
        try {
          await kit.until(async () => (await counts()).read >= REPLIES && hooks!.received.size >= REPLIES, 120_000, 'every reply read and its event received', 250);
          drainMs = Date.now() - back;
        } catch {
          drainMs = null;
        }
        await kit.sleep(SECOND_POST_WINDOW_MS);
        const c = await counts();
        const subjects = await query<{ n: number }>(world, `SELECT count(DISTINCT message_id)::int AS n FROM inbound_messages`, []);
        const posts = [...hooks!.received.values()].reduce((a, b) => a + b, 0);
        const duplicates = c.events - c.emails + Math.max(0, c.read - subjects[0]!.n);
        return {
          accepted: REPLIES,
          delivered: hooks!.received.size,
          duplicates,
          lost: REPLIES - Math.min(REPLIES, c.emails),
          drainSeconds: drainMs === null ? null : Math.round(drainMs / 100) / 10,
          duringFault: { readAtKill: atKill, appendedAtKill, emailsRead: c.read, distinctMessageIds: subjects[0]!.n, events: c.events, webhookPosts: posts, webhookIds: hooks!.received.size },
          target: `${REPLIES} replies, worker SIGKILLed and Redis lost mid-read: ${REPLIES} message.received events, 0 duplicates by event id`,
          met: c.events === REPLIES && c.emails === REPLIES && hooks!.received.size === REPLIES && c.read === REPLIES && subjects[0]!.n === REPLIES,
        };
      },
    },
  };
}
