import { makeAccount, makeMailbox } from '../helpers/factories';
import { runAdmin } from '../helpers/processes';

/** `npm run admin -- key create ... --test` makes a test key (docs/sandbox.md), as POST /admin/api/keys with mode test does. */
jest.setTimeout(60_000);

it('key create --test prints an ms_test_ token once and the key in test mode; without it a live msk_ key', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  const base = ['key', 'create', '--account', String(account.id), '--mailbox', String(mailbox.id), '--daily-limit', '10'];
  const test = await runAdmin(...base, '--name', 'ci', '--test');
  expect(test.code).toBe(0);
  expect(test.out.key).toMatchObject({ mode: 'test', token: expect.stringMatching(/^ms_test_[0-9A-Za-z]{32}$/) });
  const live = await runAdmin(...base, '--name', 'app');
  expect(live.out.key).toMatchObject({ mode: 'live', token: expect.stringMatching(/^msk_/) });
});
