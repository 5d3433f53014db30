import type { IncomingMessage, ServerResponse } from 'node:http';
import { ServiceUnavailable } from '../../../core/src/errors';

type Handler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/**
 * A process-wide budget of request-body bytes being read at once (MAX_BODY_BYTES_IN_FLIGHT, 64 MB by default): a body
 * reserves its declared length (the body limit when it is chunked) before the parser reads a byte, and gives it back
 * once parsed or abandoned. A request that does not fit is answered 503 with Retry-After at once, so many slow
 * clients (each already authenticated: the key is checked first) cannot make the API hold more than the budget.
 * One budget serves both ways a body is read: Express's JSON parser and the fast lane (lane.ts).
 */
export class BodyBudget {
  private inFlight = 0;

  constructor(private readonly options: { budgetBytes: number; bodyLimitBytes: number }) {}

  /**
   * Reserves the request's body; answers the function that gives it back (also called by itself when the response
   * closes), or null when the body does not fit now. A request without a body reserves nothing.
   */
  reserve(req: IncomingMessage, res: ServerResponse): (() => void) | null {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (!(declared > 0) && req.headers['transfer-encoding'] === undefined) return () => undefined;
    const bytes = declared > 0 ? Math.min(declared, this.options.bodyLimitBytes + 1) : this.options.bodyLimitBytes;
    if (this.inFlight > 0 && this.inFlight + bytes > this.options.budgetBytes) return null;
    this.inFlight += bytes;
    let held = true;
    const release = () => {
      if (held) {
        held = false;
        this.inFlight -= bytes;
      }
    };
    res.once('close', release);
    return release;
  }

  /** `parse` (a body parser) run within the budget: 503 with Retry-After when the body does not fit. */
  around(parse: Handler): Handler {
    return (req, res, next) => {
      const release = this.reserve(req, res);
      if (!release) {
        return next(new ServiceUnavailable('the service is reading too many request bodies at once; try again in a second', { 'Retry-After': '1' }));
      }
      parse(req, res, (err?: unknown) => {
        release();
        next(err);
      });
    };
  }
}
