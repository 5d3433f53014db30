import { MessageStatus } from '../../../generated/prisma/enums';

/**
 * The statuses a message never leaves: delivered, refused for good or out of attempts, bounced, or cancelled by a
 * pre-send guard. The one definition: the delivery's claim, a send's own status, `Prefer: wait` and retention's SQL
 * (FINAL_STATUSES_SQL) all read it.
 */
export const FINAL_STATUSES: readonly MessageStatus[] = Object.freeze(['sent', 'failed', 'bounced', 'cancelled'] as const);

/** Whether a message with this status is done: nothing will try to send it again. */
export const isFinalStatus = (status: string): boolean => (FINAL_STATUSES as readonly string[]).includes(status);

/** FINAL_STATUSES as an SQL list, `('sent', ...)`, for statements that need it in their text. */
export const FINAL_STATUSES_SQL = `(${FINAL_STATUSES.map((s) => `'${s}'`).join(', ')})`;

/**
 * The other statuses (a message still to be sent), as an SQL list: `status IN` it is served by an index on status,
 * where `status NOT IN FINAL_STATUSES_SQL` reads every row (retention's check of a partition, partitions/).
 */
export const OPEN_STATUSES_SQL = `(${Object.values(MessageStatus)
  .filter((s) => !isFinalStatus(s))
  .map((s) => `'${s}'`)
  .join(', ')})`;
