import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { hook, useDispatcher, useReceiver } from '../webhooks/support';
import { inboundDomain, sendToMx, useMx } from './support';

/**
 * A route's `endpoint` (docs/mx.md): its messages go to that one webhook, signed with its secret, even when it is not
 * subscribed to inbound.received, and to no other endpoint of the account; a route without one reaches every
 * subscribed endpoint. A release keeps to the route's endpoint too.
 */
const dns = useDns(['plain.test'], [txt('plain.test', 'v=spf1 ip4:127.0.0.1 -all')]);
const ctx = useApi();
const chosen = useReceiver();
const others = useReceiver();
useMail({ queues: ['webhook'] });
useDispatcher();
const mx = useMx(dns);

const send = (to: string, subject: string) => sendToMx(mx.port, to, subject);

it("sends a route's messages to its endpoint only, and a route without one to every subscribed endpoint", async () => {
  const tenant = await inboundDomain(ctx.api, 'in-endpoint.test', []);
  // the chosen endpoint subscribes to something else entirely: naming it in the route is what sends it the event
  const one = await hook(ctx.api, tenant.account.id, chosen, ['message.sent']);
  const other = await hook(ctx.api, tenant.account.id, others, ['inbound.received']);
  const add = async (body: Record<string, unknown>) => {
    const res = await asAdmin(ctx.api).post('/admin/api/routes').send({ account: tenant.account.id, domain: 'in-endpoint.test', ...body });
    expect(res.status).toBe(201);
    return res.body.route as { id: number };
  };
  await add({ match: 'billing', action: 'webhook', endpoint: one.id });
  const held = await add({ match: 'legal', action: 'hold', endpoint: one.id });
  await add({ match: '*', action: 'webhook' });
  // an endpoint of another account is refused, and nothing is made
  const strangers = await inboundDomain(ctx.api, 'in-endpoint-2.test', []);
  const refused = await asAdmin(ctx.api).post('/admin/api/routes').send({ account: strangers.account.id, domain: 'in-endpoint-2.test', match: 'x', action: 'webhook', endpoint: one.id });
  expect(refused.status).toBe(400);
  expect(await db().inboundRoute.count({ where: { accountId: strangers.account.id } })).toBe(0);

  const billing = await send('billing@in-endpoint.test', 'invoice');
  const general = await send('hello@in-endpoint.test', 'hello');
  const legal = await send('legal@in-endpoint.test', 'contract');
  expect((await db().mxMessage.findUniqueOrThrow({ where: { id: legal } })).routeId).toBe(held.id);
  expect((await asAdmin(ctx.api).post(`/admin/api/inbound/${legal}/release`)).status).toBe(200);

  await waitFor(() => chosen.accepted('inbound.received').length === 2 && others.accepted('inbound.received').length === 1, { timeout: 30_000, what: 'the deliveries' });
  expect(chosen.accepted('inbound.received').map((d) => d.data.id).sort()).toEqual([billing, legal].sort());
  expect(chosen.accepted('inbound.received').every((d) => d.verifiedBy.length === 1 && d.verifiedBy[0] === one.secret)).toBe(true);
  expect(others.accepted('inbound.received').map((d) => d.data.id)).toEqual([general]);
  expect(others.accepted('inbound.received')[0]!.verifiedBy).toEqual([other.secret]);
  // nothing more arrives later
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(chosen.accepted('inbound.received')).toHaveLength(2);
  expect(others.accepted('inbound.received')).toHaveLength(1);
}, 90_000);
