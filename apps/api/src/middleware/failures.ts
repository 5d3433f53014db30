import { LimitReached, Unauthorized } from '../../../core/src/errors';

const WINDOW_MS = 60_000;
/** Client addresses remembered at once; past it the oldest is forgotten. */
const CLIENTS_MAX = 10_000;

/**
 * The one failed-authentication rule of the API process, for every credential it takes: API keys (missing, malformed,
 * unknown or revoked), the admin token (bearer or the dashboard's Basic password) and the console's sign-in. One client
 * address may fail `perMinute` times a minute; past that, each further failure answers 429 with Retry-After instead of
 * 401. Only failures are counted and the credential is always checked first, so a valid credential from the same
 * address is never locked out (docs/hardening.md).
 */
export class AuthFailures {
  private readonly clients = new Map<string, { count: number; since: number }>();

  constructor(readonly perMinute: number) {}

  /**
   * Records a failure of `client` and answers the error to throw: 401 with `unauthorized`'s wording and headers, or
   * 429 once the client is past its allowance.
   */
  refuse(client: string, unauthorized: Unauthorized, now = Date.now()): Unauthorized | LimitReached {
    let entry = this.clients.get(client);
    if (!entry || now - entry.since >= WINDOW_MS) {
      entry = { count: 0, since: now };
      this.clients.delete(client);
      if (this.clients.size >= CLIENTS_MAX) this.clients.delete(this.clients.keys().next().value as string);
      this.clients.set(client, entry);
    }
    entry.count++;
    if (entry.count <= this.perMinute) return unauthorized;
    return new LimitReached('too many failed authentications from this address; try again later', (entry.since + WINDOW_MS - now) / 1000);
  }
}
