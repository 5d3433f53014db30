import './guard-env';
import { db } from '../../apps/core/src/db';
import { deliverWebhook, WebhookAttemptError } from '../../apps/core/src/webhooks/deliver';
import { createWebhook } from '../../apps/core/src/webhooks/service';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { useReceiver } from './support';

/** WEBHOOK_ALLOW_PRIVATE off, as installed: webhooks reach public addresses only (apps/core/src/outbound/guard.ts). */
const ctx = useApi();
const receiver = useReceiver();

it('refuses to create an endpoint at a loopback, private or documentation address, naming the url, and stores nothing', async () => {
  const account = await makeAccount();
  for (const url of [receiver.url, 'http://localhost:8080/hooks', 'http://10.1.2.3/hooks', 'http://192.0.2.1/hooks', 'http://[::1]/hooks', 'http://[64:ff9b::7f00:1]/hooks', 'http://169.254.169.254/latest']) {
    const res = await asAdmin(ctx.api).post('/admin/api/webhooks').send({ account: account.id, url });
    expect({ url, status: res.status }).toEqual({ url, status: 400 });
    expect(res.body).toEqual({ ok: false, error: expect.stringContaining('"url" must be a public address') });
  }
  expect(await db().webhook.count({ where: { accountId: account.id } })).toBe(0);
  // a public address is taken
  expect((await asAdmin(ctx.api).post('/admin/api/webhooks').send({ account: account.id, url: 'https://hooks.example.com/in' })).status).toBe(201);
});

it('refuses at connect time to deliver to an endpoint that is not public (one set while allowed, or a name resolving inside), and records why', async () => {
  const account = await makeAccount();
  // stored directly, as an endpoint created while WEBHOOK_ALLOW_PRIVATE was on; and one by a name that resolves to loopback
  const byAddress = await createWebhook(db(), { account: account.id, url: receiver.url });
  const byName = await createWebhook(db(), { account: account.id, url: receiver.url.replace('127.0.0.1', 'localhost') });
  const event = await db().event.create({ data: { accountId: account.id, type: 'message.sent', data: { id: 'x' } } });
  for (const hook of [byAddress, byName]) {
    await db().webhookJob.create({ data: { eventId: event.id, webhookId: hook.id } }); // owed, as the fan-out writes it
    await expect(deliverWebhook(db(), event.id, hook.id, 1)).rejects.toBeInstanceOf(WebhookAttemptError);
    const [attempt] = await db().webhookDelivery.findMany({ where: { webhookId: hook.id } });
    expect(attempt).toMatchObject({ statusCode: null, error: expect.stringMatching(/^refused: .*not a public address$/) });
  }
  expect(receiver.deliveries).toHaveLength(0);
});
