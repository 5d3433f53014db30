import type { Tx } from '../db';
import type { ClaimedRow } from './fast-claim';

/**
 * A permanent refusal of one email (a 5xx answer to RCPT TO, DATA or MAIL FROM) as the bounce policy reads it: whether
 * it is about the address (bounced) or about the email or its sender (failed), whether the address is dead, and what it
 * does beyond the row. The policy is inbound's (inbound/bounce-policy.ts's `refusalOf`), handed in at start by
 * core/src/email-kinds/, so delivery imports no domain.
 */
export interface Refusal {
  readonly status: 'failed' | 'bounced';
  readonly dead: boolean;
  /** inside the transaction that closes the row: the bounce recorded on it, its address suppressed by the policy */
  apply(tx: Tx, message: Pick<ClaimedRow, 'id' | 'accountId' | 'to'>): Promise<unknown>;
}

/** Reads a permanent answer to one of the commands about this email (failure.ts's recordFailure calls it). */
export type RefusalPolicy = (answer: string, command: 'RCPT TO' | 'DATA' | 'MAIL FROM') => Refusal;
