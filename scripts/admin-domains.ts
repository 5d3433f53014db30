/** `npm run admin -- domain ...`: the sending-domain operations (docs/domains.md), imported by scripts/admin.ts. */
import type { Db } from '../apps/core/src/db';
import { addDomain, getDomain, listDomains, removeDomain, rotateDomain, verifyDomain } from '../apps/core/src/domains';
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
    case 'add':
      return { domain: await addDomain(d, validate(domainInput, { account: flags.account, name: flags.name })) };
    case 'list':
      return { domains: await listDomains(d, validate<{ account?: number }>(domainsQuery, { account: flags.account }).account) };
    case 'show':
      return { domain: await getDomain(d, validate(idParam, arg)) };
    case 'verify':
      return { domain: await verifyDomain(d, validate(idParam, arg)) };
    case 'rotate':
      return { domain: await rotateDomain(d, validate(idParam, arg)) };
    case 'remove':
      await removeDomain(d, validate(idParam, arg));
      return {};
    default:
      throw new AppError(`unknown domain command "${action ?? ''}"\n\n${DOMAIN_HELP}`);
  }
}
