/** `npm run admin -- domain ...`: the sending-domain operations (docs/domains.md), imported by scripts/admin.ts. */
import type { Db } from '../apps/core/src/db';
import { creation, domainChange } from '../apps/core/src/changes';
import { cliChange } from './admin-audit';
import { addDomain, getDomain, listDomains, removeDomain, rotateDomain, verifyDomain, type DomainView } from '../apps/core/src/domains';
import { domainInput, domainsQuery } from '../apps/core/src/domains/schema';
import { AppError } from '../apps/core/src/errors';
import { idParam, validate } from '../apps/core/src/validate';

export const DOMAIN_HELP = `  domain add --account ID --name DOMAIN     (makes its DKIM keys; prints the records to publish)
  domain list [--account ID]
  domain show ID
  domain verify ID     (checks its records in DNS now)
  domain rotate ID     (new DKIM keys beside the current ones; signing moves once DNS shows them)
  domain remove ID
`;

type Flags = Record<string, string | boolean | undefined>;

export async function domainCommand(d: Db, action: string | undefined, arg: string | undefined, flags: Flags): Promise<unknown> {
  switch (action) {
    case 'add': {
      const input = validate(domainInput, { account: flags.account, name: flags.name });
      return { domain: await cliChange(d, creation('domain', input.account), (db: Db) => addDomain(db, input)) };
    }
    case 'list':
      return { domains: await listDomains(d, validate<{ account?: number }>(domainsQuery, { account: flags.account }).account) };
    case 'show':
      return { domain: await getDomain(d, validate(idParam, arg)) };
    case 'verify': {
      const id = validate(idParam, arg);
      const commit = (work: (db: Db) => Promise<DomainView>) => cliChange(d, domainChange('verify', id), work);
      return { domain: await verifyDomain(d, id, { commit }) };
    }
    case 'rotate': {
      const id = validate(idParam, arg);
      return { domain: await cliChange(d, domainChange('rotate', id), (db: Db) => rotateDomain(db, id)) };
    }
    case 'remove': {
      const id = validate(idParam, arg);
      await cliChange(d, { ...domainChange('delete', id), after: undefined }, (db: Db) => removeDomain(db, id));
      return {};
    }
    default:
      throw new AppError(`unknown domain command "${action ?? ''}"\n\n${DOMAIN_HELP}`);
  }
}
