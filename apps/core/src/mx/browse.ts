import type { MxMessageStatus } from '../../../../generated/prisma/enums';
import type { Db } from '../db';
import { NotFound } from '../errors';
import { mxMessagesWhere } from './repository';
import { dropHeld, releaseHeld, replayReceived } from './store';
import type { AccountScope } from '../account-scope';

/** What the admin API, the console and the public API show of a message the MX took (without its bytes). */
export interface MxMessageView {
  id: string;
  account: number;
  route: number | null;
  domain: string;
  status: MxMessageStatus;
  reason: string | null;
  hash: string | null;
  envelope: { from: string; to: string[] };
  client: { address: string; helo: string };
  from: string;
  subject: string;
  auth: unknown;
  spam: unknown;
  size: number;
  received_at: Date;
}

export async function listMxMessages(db: Db, query: { account?: AccountScope; status?: MxMessageStatus; limit: number; before?: Date }): Promise<MxMessageView[]> {
  const rows = await mxMessagesWhere(db, { accountId: query.account, status: query.status, before: query.before }, query.limit);
  return rows.map((r) => ({
    id: r.id,
    account: r.accountId,
    route: r.routeId,
    domain: r.domain,
    status: r.status,
    reason: r.reason,
    hash: r.hash,
    envelope: { from: r.mailFrom, to: r.rcptTo },
    client: { address: r.clientAddress, helo: r.helo },
    from: r.fromAddress,
    subject: r.subject,
    auth: r.auth,
    spam: r.spam,
    size: r.size,
    received_at: r.receivedAt,
  }));
}

/** Release, drop or replay a message by id: NotFound when there is no such message in the state the action needs. */
export async function actOnMxMessage(db: Db, id: string, action: 'release' | 'drop' | 'replay'): Promise<void> {
  const done = action === 'release' ? await releaseHeld(db, id) : action === 'drop' ? await dropHeld(db, id) : await replayReceived(db, id);
  if (!done) throw new NotFound(action === 'replay' ? `no delivered inbound message ${id}` : `no held inbound message ${id}`);
}
