import { Semaphore } from '../batch';
import { config } from '../config';
import type { Db } from '../db';
import { DomainSigner } from '../domains/sending';
import { FastClaims, type ClaimedRow } from './fast-claim';
import type { EmailKinds } from './kinds';
import { Heartbeat } from './lease';
import type { MailboxLogins } from './login';
import { DeliveryQueue } from './outbox';
import type { RefusalPolicy } from './refusal';
import { Transports } from './transport';

/**
 * What a worker process keeps for delivering, made once by its wiring (apps/worker/src/main.ts) and passed to the
 * delivery processor: the database, the kinds of email (their pre-send guards, links and
 * what follows their end), the claims and "sent" marks its deliveries share (with their
 * counts), the heartbeat of its leases, the SMTP pools, and the bounds on email bytes and `dispatch` rows in flight.
 */
export interface Delivery {
  readonly db: Db;
  /** what each kind of email needs from delivery (its links, its guard, what follows its end): kinds.ts */
  readonly kinds: EmailKinds;
  /** what a permanent refusal of an email means and does (its bounce, the address's suppression): refusal.ts */
  readonly refusals: RefusalPolicy;
  readonly claims: FastClaims;
  /** renews the leases of the rows this process holds */
  readonly heartbeat: Heartbeat;
  readonly transports: Transports;
  /** DKIM signing with the keys of verified sending domains */
  readonly signer: DomainSigner;
  /** the worker's own queueing of rows it wrote (a broadcast's copies), batched as the API's */
  readonly queue: DeliveryQueue;
  /** the bytes of email in memory on their way to the wire (WORKER_MAX_BYTES_IN_FLIGHT; see takeBytes) */
  readonly bytes: Semaphore;
  /** the rows of `dispatch` jobs on the wire at once (batchRowsOnTheWire) */
  readonly rows: Semaphore;
  /** where test keys' messages go instead of SMTP (docs/sandbox.md); without one they wait, never sent */
  readonly sandbox: SandboxOutlet | null;
  /** closes the SMTP pools (the worker's shutdown, a test's end) */
  close(): void;
}

/**
 * The sandbox as delivery sees it (sandbox/sink.ts implements it; the worker's wiring hands it in): it takes a claimed
 * message of a test key's send and writes what became of it, as a delivery would.
 */
export interface SandboxOutlet {
  deliver(delivery: Pick<Delivery, 'db' | 'kinds'>, message: ClaimedRow): Promise<Extract<DeliveryOutcome, { kind: 'sent' | 'rejected' | 'early' }>>;
}

/**
 * What a process's main hands to delivery at start: its kinds of email, how mailboxes sign in and what a permanent
 * refusal does (core/src/email-kinds/).
 */
export interface DeliveryRegistrations {
  readonly kinds: EmailKinds;
  readonly logins: MailboxLogins;
  readonly refusals: RefusalPolicy;
}

/** `domainKeysTtlMs`: how long the signer keeps a domain's keys (30 s; a test of rotation wants 0). */
export function createDelivery(db: Db, registrations: DeliveryRegistrations, options: { domainKeysTtlMs?: number; sandbox?: SandboxOutlet } = {}): Delivery {
  // a registration left out stops the process, as a kind of email left out does (kinds.ts)
  for (const part of ['kinds', 'logins', 'refusals'] as const) {
    if (!registrations[part]) throw new Error(`delivery: no ${part} registered (core/src/email-kinds/)`);
  }
  const transports = new Transports(db, registrations.logins);
  return {
    db,
    kinds: registrations.kinds,
    refusals: registrations.refusals,
    claims: new FastClaims(db, registrations.kinds),
    heartbeat: new Heartbeat(db),
    transports,
    signer: new DomainSigner(options.domainKeysTtlMs),
    queue: new DeliveryQueue(),
    bytes: new Semaphore(config().workerMaxBytesInFlight),
    rows: new Semaphore(batchRowsOnTheWire()),
    sandbox: options.sandbox ?? null,
    close: () => transports.close(),
  };
}

export type DeliveryOutcome =
  | { kind: 'sent'; response: string }
  /** nothing to do: the row is gone or already final (a job that ran twice) */
  | { kind: 'finished'; status: string }
  /** another worker holds the row until then; look again after */
  | { kind: 'busy'; until: Date }
  /** send_at is still ahead */
  | { kind: 'early'; until: Date }
  | { kind: 'cancelled'; reason: string }
  | { kind: 'rejected'; status: 'failed' | 'bounced'; response: string }
  /** its mailbox needs reconnecting (OAuth2 consent refused): the row waits, deferred, until it is reconnected */
  | { kind: 'waiting'; reason: string };

/** A failure worth retrying (connection refused, timeout, SMTP 4xx): the job must throw it so BullMQ retries. */
export class TemporaryDeliveryError extends Error {
  override name = 'TemporaryDeliveryError';
}

/**
 * The rows a worker process has on the wire at once from `dispatch` jobs, however many such jobs run: five times
 * WORKER_CONCURRENCY (100 by default). Each such row holds its email, attachments included, in memory, so memory stays
 * bounded; the SMTP pools stay busy (with WORKER_CONCURRENCY itself as the bound, rows waited on each other's claims
 * and throughput fell from 1,100 to 650 msg/s; bench/README.md). A slot is held from the claim to the end of the SMTP
 * conversation, not during the "sent" mark after it.
 */
export function batchRowsOnTheWire(): number {
  return config().workerConcurrency * 5;
}
