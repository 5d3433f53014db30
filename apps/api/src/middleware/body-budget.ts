import type { IncomingMessage, ServerResponse } from 'node:http';
import { ServiceUnavailable } from '../../../core/src/errors';
import { clientOf } from './client';

type Handler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

export interface BodyBudgetOptions {
  budgetBytes: number;
  bodyLimitBytes: number;
  /** the most one client address may hold of the budget at once (the public pages' budget: a stranger's share) */
  perClientBytes?: number;
  /** bodies of a declared length up to `small.bodyLimitBytes` reserve from a pool of their own (a person's form post
   * is a few hundred bytes: strangers holding the large bodies' pool do not hold it back) */
  small?: Omit<BodyBudgetOptions, 'small' | 'deadlineMs'>;
  /** a body not read within this long is cut off (its connection closed): strangers that trickle give their share back */
  deadlineMs?: number;
}

/**
 * A process-wide budget of request-body bytes being read at once: a body reserves its declared length (the body limit
 * when it is chunked) before the parser reads a byte, and gives it back once parsed or abandoned. A request that does
 * not fit is answered 503 with Retry-After at once, so many slow clients cannot make the API hold more than the budget.
 *
 * Two budgets, so that strangers cannot starve paying clients (docs/hardening.md): the authenticated one
 * (MAX_BODY_BYTES_IN_FLIGHT, 64 MB), which a request enters only once its credential was checked, serving both ways
 * a body is read (Express's JSON parser and the fast lane, lane.ts); and a small one for each public page that reads
 * a body (the hosted form, the one-click unsubscribe, the console's sign-in: app.ts), with a per-client share and a
 * deadline. A request of no known route or with a failed credential reads no body at all.
 */
export class BodyBudget {
  private inFlight = 0;
  private readonly clients = new Map<string, number>();

  private readonly small?: BodyBudget;

  constructor(private readonly options: BodyBudgetOptions) {
    if (options.small) this.small = new BodyBudget(options.small);
  }

  /**
   * Reserves the request's body; answers the function that gives it back (also called by itself when the response
   * closes), or null when the body does not fit now (in the budget, or in the client's share of it). A request without
   * a body reserves nothing.
   */
  reserve(req: IncomingMessage, res: ServerResponse, client = ''): (() => void) | null {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (!(declared > 0) && req.headers['transfer-encoding'] === undefined) return () => undefined;
    if (this.small && declared <= this.small.options.bodyLimitBytes && req.headers['transfer-encoding'] === undefined) return this.small.reserve(req, res, client);
    const bytes = declared > 0 ? Math.min(declared, this.options.bodyLimitBytes + 1) : this.options.bodyLimitBytes;
    if (this.inFlight > 0 && this.inFlight + bytes > this.options.budgetBytes) return null;
    const share = this.options.perClientBytes;
    const held = this.clients.get(client) ?? 0;
    if (share !== undefined && held > 0 && held + bytes > share) return null;
    this.inFlight += bytes;
    if (share !== undefined) this.clients.set(client, held + bytes);
    let holding = true;
    const release = () => {
      if (!holding) return;
      holding = false;
      this.inFlight -= bytes;
      if (share === undefined) return;
      const left = (this.clients.get(client) ?? bytes) - bytes;
      if (left > 0) this.clients.set(client, left);
      else this.clients.delete(client);
    };
    res.once('close', release);
    return release;
  }

  /** `parse` (a body parser) run within the budget: 503 with Retry-After when the body does not fit. */
  around(parse: Handler): Handler {
    return (req, res, next) => {
      const release = this.reserve(req, res, clientOf(req));
      if (!release) {
        return next(new ServiceUnavailable('the service is reading too many request bodies at once; try again in a second', { 'Retry-After': '1' }));
      }
      const deadline = this.options.deadlineMs;
      const cut = deadline === undefined ? undefined : setTimeout(() => (req.socket ?? res.socket)?.destroy(), deadline);
      if (cut) res.once('close', () => clearTimeout(cut));
      parse(req, res, (err?: unknown) => {
        clearTimeout(cut);
        release();
        next(err);
      });
    };
  }
}
