import type { IncomingMessage, ServerResponse } from 'node:http';
import { ServiceUnavailable } from '../../../core/src/errors';

type Handler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/**
 * A process-wide budget of request-body bytes being read at once (MAX_BODY_BYTES_IN_FLIGHT, 64 MB by default): a body
 * reserves its declared length (the body limit when it is chunked) before the parser reads a byte, and gives it back
 * once parsed or abandoned. A request that does not fit is answered 503 with Retry-After at once, so many slow
 * clients (each already authenticated: the key is checked first) cannot make the API hold more than the budget.
 */
export function withinBodyBudget(parse: Handler, options: { budgetBytes: number; bodyLimitBytes: number }): Handler {
  let inFlight = 0;
  return (req, res, next) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (!(declared > 0) && req.headers['transfer-encoding'] === undefined) return parse(req, res, next);
    const bytes = declared > 0 ? Math.min(declared, options.bodyLimitBytes + 1) : options.bodyLimitBytes;
    if (inFlight > 0 && inFlight + bytes > options.budgetBytes) {
      return next(new ServiceUnavailable('the service is reading too many request bodies at once; try again in a second', { 'Retry-After': '1' }));
    }
    inFlight += bytes;
    let held = true;
    const release = () => {
      if (held) {
        held = false;
        inFlight -= bytes;
      }
    };
    res.once('close', release);
    parse(req, res, (err?: unknown) => {
      release();
      next(err);
    });
  };
}

