import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import type { FastAdds } from './fast-add';
import { validate } from '../validate';
import type { Verifier } from '../verify';
import { keepVerifications } from '../verify/repository';
import { listLists } from './lists';
import { addSubscriberByKey, removeSubscriber, requireAccountList, subscriberInput, unsubscribeInput } from '.';

/**
 * The public API's list and subscriber operations past authentication: validate the input, call the domain, give the
 * answer's body. The HTTP routes (apps/api/src/routes) and the MCP tools (apps/api/src/mcp) both call these.
 */

export async function listListsOf(db: Db, key: ApiKey) {
  return { ok: true as const, lists: await listLists(db, key.accountId) };
}

export async function subscribe(db: Db, adds: FastAdds, verifier: Verifier, key: ApiKey, body: unknown) {
  const { list: listKey, verify, ...person } = validate(subscriberInput, body ?? {});
  if (!verify) return { ok: true as const, status: await addSubscriberByKey(db, adds, key.accountId, listKey, person, key.id) };
  // docs/verification.md: verified first; blocked, nobody is added (like a suppressed address: answered, not refused)
  const list = await requireAccountList(db, key.accountId, listKey);
  const [verification] = await verifier.verify(db, key.accountId, [person.email]);
  if (verify === 'block_undeliverable' && verification!.result === 'undeliverable') return { ok: true as const, status: 'undeliverable' as const, verification: verification! };
  const status = await addSubscriberByKey(db, adds, key.accountId, listKey, person, key.id);
  await keepVerifications(db, { list: list.id }, [{ email: person.email, result: verification!.result, checkedAt: new Date() }]);
  return { ok: true as const, status, verification: verification! };
}

export async function unsubscribe(db: Db, key: ApiKey, body: unknown) {
  const { list: listKey, email } = validate(unsubscribeInput, body);
  const list = await requireAccountList(db, key.accountId, listKey);
  return { ok: true as const, status: await removeSubscriber(db, list, email, { source: 'api_key' }) };
}
