/** `npm run admin -- webhook ...`: the webhook admin operations (docs/webhooks.md), imported by scripts/admin.ts. */
import type { Db } from '../apps/core/src/db';
import { creation, webhookChange } from '../apps/core/src/changes';
import { cliChange } from './admin-audit';
import { AppError } from '../apps/core/src/errors';
import { idParam, validate } from '../apps/core/src/validate';
import * as schemas from '../apps/core/src/webhooks/schema';
import { changeWebhook, createWebhook, deleteWebhook, listDeliveries, listWebhooks, rotateSecret } from '../apps/core/src/webhooks/service';

export const WEBHOOK_HELP = `  webhook create --account ID --url URL [--events a.b,c.d]     (prints the secret once)
  webhook list [--account ID]
  webhook set ID [--url URL] [--events a.b,c.d|*] [--enable|--disable]
  webhook rotate ID     (prints the new secret once; the old one keeps signing for 24 h)
  webhook delete ID
  webhook deliveries ID [--limit N]
`;

export const webhookOptions = {
  url: { type: 'string' },
  events: { type: 'string' },
  enable: { type: 'boolean' },
  disable: { type: 'boolean' },
} as const;

type Flags = Record<string, string | boolean | undefined>;

const eventsFrom = (list: unknown) => (typeof list === 'string' ? list.split(',').map((s) => s.trim()).filter(Boolean) : undefined);
const SECRET_NOTE = 'the secret is shown once: store it now';

export async function webhookCommand(d: Db, action: string | undefined, arg: string | undefined, flags: Flags): Promise<unknown> {
  switch (action) {
    case 'create': {
      const input = validate(schemas.webhookInput, { account: flags.account, url: flags.url, events: eventsFrom(flags.events) });
      return { webhook: await cliChange(d, creation('webhook'), (db: Db) => createWebhook(db, input)), note: SECRET_NOTE };
    }
    case 'list':
      return { webhooks: await listWebhooks(d, validate(schemas.webhooksQuery, { account: flags.account }).account) };
    case 'set': {
      const enabled = flags.enable ? true : flags.disable ? false : undefined;
      const changes = validate(schemas.webhookChanges, { url: flags.url, events: eventsFrom(flags.events), enabled });
      const id = validate(idParam, arg);
      return { webhook: await cliChange(d, webhookChange('update', id), (db: Db) => changeWebhook(db, id, changes)) };
    }
    case 'rotate': {
      const id = validate(idParam, arg);
      return { webhook: await cliChange(d, webhookChange('rotate', id), (db: Db) => rotateSecret(db, id)), note: SECRET_NOTE };
    }
    case 'delete': {
      const id = validate(idParam, arg);
      await cliChange(d, { ...webhookChange('delete', id), after: undefined }, (db: Db) => deleteWebhook(db, id));
      return {};
    }
    case 'deliveries':
      return { deliveries: await listDeliveries(d, validate(idParam, arg), validate(schemas.deliveriesQuery, { limit: flags.limit }).limit) };
    default:
      throw new AppError(`unknown webhook command "${action ?? ''}"\n\n${WEBHOOK_HELP}`);
  }
}
