import { asAdmin, useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeAccount, makeMailbox } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { hook, useDispatcher, useReceiver } from '../webhooks/support';
import { published } from './support';

/** domain.verified and domain.failed end to end: the outbox, the worker's fan-out, a signed delivery to a real receiver. */
const dns = useDns(['test']);
const ctx = useApi();
useMail({ queues: ['webhook'] });
useDispatcher();
const receiver = useReceiver();

it('delivers domain.verified and domain.failed, signed, to the endpoints that want them', async () => {
  const account = await makeAccount();
  await makeMailbox(account.id, { address: 'hi@hooked.test' });
  await hook(ctx.api, account.id, receiver, ['domain.verified', 'domain.failed']);
  const { body } = await asAdmin(ctx.api).post('/admin/api/domains').send({ account: account.id, name: 'hooked.test' });
  const id = body.domain.id;
  await dns.publish(published(body.domain.records));
  await asAdmin(ctx.api).post(`/admin/api/domains/${id}/verify`);
  const [verified] = await waitFor(() => (receiver.accepted('domain.verified').length ? receiver.accepted('domain.verified') : undefined), { timeout: 25_000, what: 'domain.verified' });
  expect(verified!.data).toMatchObject({ domain: { id, account: account.id, name: 'hooked.test', status: 'verified', previous: 'pending', reason: null } });
  expect(verified!.verifiedBy.length).toBeGreaterThan(0);

  await dns.publish([]);
  await asAdmin(ctx.api).post(`/admin/api/domains/${id}/verify`);
  await asAdmin(ctx.api).post(`/admin/api/domains/${id}/verify`);
  const [failed] = await waitFor(() => (receiver.accepted('domain.failed').length ? receiver.accepted('domain.failed') : undefined), { timeout: 25_000, what: 'domain.failed' });
  expect(failed!.data).toMatchObject({ domain: { id, status: 'failed', previous: 'verified', reason: expect.stringContaining('DKIM (RSA) missing') } });
  expect(receiver.accepted('domain.verified')).toHaveLength(1);
});
