import type { Prisma } from '../../../../generated/prisma/client';
import type { MxMessageStatus } from '../../../../generated/prisma/enums';
import type { Db, Tx } from '../db';

/** The MX's statements (docs/mx.md): inbound domains, their routes, and the messages it accepted. */

/** The inbound domain of this name: verified and turned inbound, else null. */
export async function inboundDomainNamed(db: Tx, name: string) {
  return db.domain.findFirst({ where: { name, status: 'verified', inbound: true }, select: { id: true, accountId: true, name: true } });
}

export async function routesOfDomain(db: Tx, domainId: number) {
  return db.inboundRoute.findMany({ where: { domainId } });
}

export type RouteRow = Awaited<ReturnType<typeof routesOfDomain>>[number];

export interface NewMxMessage {
  id: string;
  accountId: number;
  routeId: number | null;
  domain: string;
  status: MxMessageStatus;
  reason: string | null;
  hash: string | null;
  mailFrom: string;
  rcptTo: string[];
  clientAddress: string;
  helo: string;
  fromAddress: string;
  subject: string;
  auth: Prisma.InputJsonValue;
  spam: Prisma.InputJsonValue | null;
  raw: Buffer;
  receivedAt: Date;
}

export async function insertMxMessage(tx: Tx, row: NewMxMessage): Promise<void> {
  const { spam, raw, ...rest } = row;
  await tx.mxMessage.create({ data: { ...rest, raw: new Uint8Array(raw), size: raw.length, ...(spam === null ? {} : { spam }) } });
}

export async function mxMessageById(db: Tx, id: string) {
  return db.mxMessage.findUnique({ where: { id } });
}

export type MxMessageRow = NonNullable<Awaited<ReturnType<typeof mxMessageById>>>;

/** Moves a held message on; false when it was not held any more (another operator got there first). */
export async function leaveHeld(tx: Tx, id: string, status: MxMessageStatus): Promise<boolean> {
  const { count } = await tx.mxMessage.updateMany({ where: { id, status: 'held' }, data: { status } });
  return count === 1;
}

/** Newest first, without the raw bytes. */
export async function mxMessagesWhere(db: Db | Tx, where: { accountId?: number; status?: MxMessageStatus; before?: Date }, limit: number) {
  return db.mxMessage.findMany({
    where: { accountId: where.accountId, status: where.status, receivedAt: where.before ? { lt: where.before } : undefined },
    omit: { raw: true },
    orderBy: [{ receivedAt: 'desc' }, { id: 'desc' }],
    take: limit,
  });
}

/** The mailbox that sent one of our messages (a VERP address names the message), or null when it is gone. */
export async function senderMailboxOf(db: Tx, messageId: string) {
  const message = await db.message.findUnique({ where: { id: messageId }, select: { mailboxId: true } });
  return message ? db.mailbox.findUnique({ where: { id: message.mailboxId } }) : null;
}
