/** `npm run admin -- tracking-domain ...`: the tracking-domain operations (docs/tracking-domains.md), imported by scripts/admin.ts. */
import type { Db } from '../apps/core/src/db';
import { creation, trackingDomainChange } from '../apps/core/src/changes';
import { cliChange, cliChangeAfter } from './admin-audit';
import { AppError } from '../apps/core/src/errors';
import { addTrackingDomain, getTrackingDomain, listTrackingDomains, removeTrackingDomain, verifyTrackingDomain } from '../apps/core/src/tracking-domains';
import { trackingDomainInput, trackingDomainsQuery } from '../apps/core/src/tracking-domains/schema';
import { idParam, validate } from '../apps/core/src/validate';

export const TRACKING_DOMAIN_HELP = `  tracking-domain add --account ID --name NAME     (prints the CNAME to publish)
  tracking-domain list [--account ID]
  tracking-domain show ID
  tracking-domain verify ID     (checks its CNAME now, and orders its certificate when one is due)
  tracking-domain remove ID
`;

type Flags = Record<string, string | boolean | undefined>;

export async function trackingDomainCommand(d: Db, action: string | undefined, arg: string | undefined, flags: Flags): Promise<unknown> {
  switch (action) {
    case 'add': {
      const input = validate(trackingDomainInput, { account: flags.account, name: flags.name });
      return { tracking_domain: await cliChange(d, creation('tracking-domain', input.account), (db: Db) => addTrackingDomain(db, input)) };
    }
    case 'list':
      return { tracking_domains: await listTrackingDomains(d, validate<{ account?: number }>(trackingDomainsQuery, { account: flags.account }).account) };
    case 'show':
      return { tracking_domain: await getTrackingDomain(d, validate(idParam, arg)) };
    case 'verify': {
      const id = validate(idParam, arg);
      return { tracking_domain: await cliChangeAfter(d, trackingDomainChange('verify', id), (db: Db) => verifyTrackingDomain(db, id)) };
    }
    case 'remove': {
      const id = validate(idParam, arg);
      await cliChange(d, { ...trackingDomainChange('delete', id), after: undefined }, (db: Db) => removeTrackingDomain(db, id));
      return {};
    }
    default:
      throw new AppError(`unknown tracking-domain command "${action ?? ''}"\n\n${TRACKING_DOMAIN_HELP}`);
  }
}
