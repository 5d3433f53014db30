/** `npm run admin -- route ...`: the MX's inbound routes (docs/mx.md), imported by scripts/admin.ts. */
import type { Db } from '../apps/core/src/db';
import { creation, routeChange } from '../apps/core/src/changes';
import { cliChange } from './admin-audit';
import { AppError } from '../apps/core/src/errors';
import { addRoute, listRoutes, removeRoute, routeInput, routesQuery } from '../apps/core/src/mx/routes';
import { idParam, validate } from '../apps/core/src/validate';

export const ROUTE_HELP = `  route add --account ID --domain DOMAIN --match LOCAL|NAME+*|* --action webhook|hold|reject [--endpoint ID] [--spam-threshold N]
  route list [--account ID]
  route remove ID
`;

export const routeOptions = {
  domain: { type: 'string' },
  match: { type: 'string' },
  action: { type: 'string' },
  endpoint: { type: 'string' },
  'spam-threshold': { type: 'string' },
} as const;

type Flags = Record<string, string | boolean | undefined>;

export async function routeCommand(d: Db, action: string | undefined, arg: string | undefined, flags: Flags): Promise<unknown> {
  switch (action) {
    case 'add': {
      // a domain given as digits is its id, else its name
      const domain = typeof flags.domain === 'string' && /^\d+$/.test(flags.domain) ? Number(flags.domain) : flags.domain;
      const input = { account: flags.account, domain, match: flags.match, action: flags.action, endpoint: flags.endpoint, spam_threshold: flags['spam-threshold'] };
      const route = validate(routeInput, input);
      return { route: await cliChange(d, creation('route', route.account), (db: Db) => addRoute(db, route)) };
    }
    case 'list':
      return { routes: await listRoutes(d, validate<{ account?: number }>(routesQuery, { account: flags.account }).account) };
    case 'remove': {
      const id = validate(idParam, arg);
      await cliChange(d, { ...routeChange('delete', id), after: undefined }, (db: Db) => removeRoute(db, id));
      return {};
    }
    default:
      throw new AppError(`unknown route command "${action ?? ''}"\n\n${ROUTE_HELP}`);
  }
}
