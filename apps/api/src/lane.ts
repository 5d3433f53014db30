import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Express } from 'express';
import type { ApiKey } from '../../../generated/prisma/client';
import type { Scope } from '../../core/src/auth/keys';
import { subscribe } from '../../core/src/subscribers/operations';
import type { Db } from '../../core/src/db';
import { clientKey } from '../../core/src/ip';
import { bearerToken, type KeyAuthenticator } from './middleware/auth';
import type { BodyBudget } from './middleware/body-budget';
import type { AuthFailures } from './middleware/failures';
import type { ApiState } from './state';
import { refusalOf, writeJson, writeRefusal } from './middleware/errors';
import { trackRequest } from './middleware/request';
import { checkBody } from './middleware/text';
import { postSend } from './routes/send';
import { requireLiveKey } from '../../core/src/sandbox';

/**
 * The fast lane: the two busiest writes of the public API, POST /api/v1/send and POST /api/v1/subscribers, answered on
 * Node's own request and response, without Express. Measured in the same bench run, Express's own work per request
 * (its router, the request and response objects it dresses, body-parser, res.json) was more than half of the API's
 * CPU per send: 0.75 ms a send through Express, 0.28 in a raw handler, back to back. With it the API's CPU per send is
 * about bare Express's (bench/README.md, "The newest figures").
 *
 * The lane takes only the plain case, decided before a byte of the body is read: a JSON body (UTF-8, not compressed)
 * of a declared length within the limit, a key the authenticator knows, room in the body budget; and for subscribers no
 * Idempotency-Key. Anything else goes to Express exactly as it came, and Express answers it (every refusal of those
 * checks is worded there, once). What the lane does answer, it answers with the same functions as Express's routes: the
 * request id, metric and log line (trackRequest), the body's checks (checkBody), the route itself (postSend,
 * subscribe) and the wording of refusals (refusalOf), so the two ways cannot answer differently.
 */
type LaneRoute = {
  /** Express answers the request instead when this says no (a header the lane does not handle) */
  takes(req: IncomingMessage): boolean;
  /** the key's scope the route needs */
  scope: Scope;
  answer(options: LaneOptions, res: ServerResponse, key: ApiKey, body: unknown, req: IncomingMessage): Promise<{ status: number; body: unknown }>;
};

const ROUTES = new Map<string, LaneRoute>([
  ['/api/v1/send', { takes: () => true, scope: 'send', answer: (o, res, key, body, req) => postSend(o.db, o.state.sending, res, key, body, req.headers) }],
  [
    '/api/v1/subscribers',
    {
      // an Idempotency-Key needs Express's idempotent() middleware: those requests go there
      takes: (req) => req.headers['idempotency-key'] === undefined,
      scope: 'subscribers',
      answer: async (o, _res, key, body) => {
        requireLiveKey(key);
        return { status: 200, body: await subscribe(o.db, o.state.adds, o.state.verifier, key, body) };
      },
    },
  ],
]);

/** The only body types the lane reads; body-parser reads any other charset, or refuses it, on the Express side. */
const PLAIN_JSON = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

export interface LaneOptions {
  db: Db;
  /** the app's state (state.ts): what the routes need, and the count of requests the lane answered */
  state: ApiState;
  auth: KeyAuthenticator;
  /** an address locked out by the failure rule goes to Express, which refuses it (middleware/failures.ts) */
  failures: AuthFailures;
  budget: BodyBudget;
  bodyLimitBytes: number;
}

/** `app` with the fast lane in front: a request handler that is also the Express app (listen, set, use go to it). */
export function withFastLane(app: Express, options: LaneOptions): Express {
  const handler = function (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) {
    const route = req.method === 'POST' ? ROUTES.get(req.url ?? '') : undefined;
    const token = route && takesBody(req, options.bodyLimitBytes) && route.takes(req) ? bearerToken(req.headers.authorization) : undefined;
    const toExpress = () => (app as unknown as (q: IncomingMessage, s: ServerResponse, n?: (err?: unknown) => void) => void)(req, res, next);
    if (!route || !token) return toExpress();
    if (options.failures.anyLockedOut() && options.failures.lockedOut(clientAddress(app, req))) return toExpress();
    void laneOrExpress(req, res, route, token, options, toExpress);
  };
  Object.setPrototypeOf(handler, app);
  return handler as unknown as Express;
}

/** The client as Express would read it (req.ip, under the app's `trust proxy` setting), counted as middleware/client.ts counts. */
function clientAddress(app: Express, req: IncomingMessage): string {
  return clientKey((Reflect.get(express.request, 'ip', Object.create(req, { app: { value: app } })) as string | undefined) ?? '');
}

/** A body the lane reads itself: plain UTF-8 JSON of a declared length, at most the limit. */
function takesBody(req: IncomingMessage, limit: number): boolean {
  const { headers } = req;
  const length = Number(headers['content-length']);
  return (
    length > 0 &&
    length <= limit &&
    headers['transfer-encoding'] === undefined &&
    (headers['content-encoding'] === undefined || headers['content-encoding'] === 'identity') &&
    PLAIN_JSON.test(headers['content-type'] ?? '')
  );
}

async function laneOrExpress(req: IncomingMessage, res: ServerResponse, route: LaneRoute, token: string, options: LaneOptions, toExpress: () => void): Promise<void> {
  let key: ApiKey | null;
  try {
    key = await options.auth.authenticate(token);
  } catch {
    key = null; // Postgres away on a key not in memory: Express asks again and answers the outage
  }
  // a key outside the route's scope: Express answers the 403 (middleware/auth.ts requireScope)
  if (key && !key.scopes.includes(route.scope)) key = null;
  const release = key && options.budget.reserve(req, res);
  if (!key || !release) return toExpress();
  options.state.lane.answered++;
  const url = req.url!;
  const requestId = trackRequest(req, res, url, () => url);
  try {
    const body = await readJson(req);
    release();
    checkBody(body);
    const answer = await route.answer(options, res, key, body, req);
    writeJson(res, answer.status, answer.body);
  } catch (err) {
    release();
    const refusal = refusalOf(err, requestId, { method: req.method, path: url });
    if (!res.headersSent && !res.destroyed) writeRefusal(res, refusal);
  }
}

/** The request's body parsed as JSON, as body-parser reads it (UTF-8, a leading BOM dropped, any JSON value). */
function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', reject);
    req.on('aborted', () => reject(Object.assign(new Error('request aborted'), { type: 'request.aborted' })));
    req.on('end', () => {
      let text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(Object.assign(new SyntaxError('the body is not valid JSON'), { type: 'entity.parse.failed' }));
      }
    });
  });
}
