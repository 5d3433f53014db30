import { db } from '../../apps/core/src/db';
import { startInboundReader, type InboundReader } from '../../apps/core/src/inbound/reader';
import { updateMailbox } from '../../apps/core/src/mailbox-settings';
import { useApi } from '../helpers/api';
import { Dovecot } from '../helpers/dovecot';
import { useDelivery, useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { firstStepSent } from '../outreach/support';

export const PASS = 'secret-pass';

/**
 * The IMAP reader against a real dovecot (reader.test.ts, reader-reports.test.ts): each test has its own IMAP user (=
 * the INBOX of one mailbox). `readers` are the running readers, stopped after the file; a test may replace them.
 */
export function useImapReader() {
  const ctx = useApi();
  const worker = useDelivery();
  const sink = useMail({ delivery: worker });
  const dove = new Dovecot();
  const users = Array.from({ length: 20 }, (_, i) => `box${i}@imap.test`);
  let nextUser = 0;
  const readers: InboundReader[] = [];

  beforeAll(async () => {
    await dove.start(Object.fromEntries(users.map((u) => [u, PASS])));
    readers.push(startInboundReader(db(), { refreshMs: 200 }));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(readers.map((r) => r.stop()));
    await dove.stop();
  });

  /** An IMAP user no test read yet. */
  const freshUser = () => users[nextUser++]!;

  /** An account whose campaign has sent step 1 to `email`; its mailbox reads a fresh IMAP user from now on. */
  async function sentTo(email: string) {
    const user = freshUser();
    const { tenant, campaign, prospectId, first } = await firstStepSent(worker.delivery, sink.url, email);
    await updateMailbox(db(), tenant.mailbox.id, { imap: dove.url(user, PASS) });
    return { tenant, campaign, prospectId, first, user, mailboxId: tenant.mailbox.id };
  }

  const handled = (mailboxId: number, count = 1) =>
    waitFor(async () => {
      const rows = await db().inboundMessage.findMany({ where: { mailboxId }, orderBy: { id: 'asc' } });
      return rows.length >= count ? rows : null;
    }, { timeout: 20_000, what: `${count} inbound message(s) of mailbox ${mailboxId}` });

  const prospect = (id: number) => db().prospect.findUniqueOrThrow({ where: { id } });

  return { ctx, worker, sink, dove, readers, freshUser, sentTo, handled, prospect };
}
