import type { Db } from '../../core/src/db';
import { createSending, type Sending } from '../../core/src/sending/accept';
import { FastAdds } from '../../core/src/subscribers/fast-add';
import { Verifier } from '../../core/src/verify';
import type { EmailKinds } from '../../core/src/delivery/kinds';
import { deliveryRegistrations } from '../../core/src/email-kinds';

/**
 * What an API process keeps in memory for its requests, made once by createApp over its database and passed down to the
 * routes, the fast lane and the MCP tools (no module holds any of it, so a test reads the figures of the app it made):
 * the send path's writer, mailbox cache and `Prefer: wait` waiters, the subscribers' shared add, and the lane's count.
 */
export interface ApiState {
  sending: Sending;
  adds: FastAdds;
  /** address verification: the disposable domains, the resolver and the mailbox probe (docs/verification.md) */
  verifier: Verifier;
  /** requests the fast lane answered itself (lane.ts; a test's way to know which side answered) */
  lane: { answered: number };
  /** what each kind of email registers with delivery (core/src/email-kinds): the operator's story composes with it */
  kinds: EmailKinds;
}

export function createApiState(db: Db): ApiState {
  return { sending: createSending(db), adds: new FastAdds(db), verifier: new Verifier(), lane: { answered: 0 }, kinds: deliveryRegistrations().kinds };
}
