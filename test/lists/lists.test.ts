import { useApi } from '../helpers/api';
import { makeList } from '../helpers/factories';
import { address, listFixture } from './support';

const ctx = useApi();

describe('GET /api/v1/lists', () => {
  it('answers the key\'s account\'s lists with key, name, confirm and the active count', async () => {
    const f = await listFixture(ctx.api, { name: 'Weekly' });
    const open = await makeList(f.tenant.account.id, f.tenant.mailbox.id, { name: 'Open', confirm: false });
    const res = await f.client.get('/api/v1/lists');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      lists: [
        { key: f.list.key, name: 'Weekly', confirm: true, subscribers: 0, public: false, preferences_url: `http://mail.test/preferences/list/${f.list.key}`, archive_url: null },
        { key: open.key, name: 'Open', confirm: false, subscribers: 0, public: false, preferences_url: `http://mail.test/preferences/list/${open.key}`, archive_url: null },
      ],
    });
  });

  it('never shows another account\'s lists', async () => {
    const mine = await listFixture(ctx.api);
    const theirs = await listFixture(ctx.api);
    const keys = (await mine.client.get('/api/v1/lists')).body.lists.map((l: { key: string }) => l.key);
    expect(keys).toEqual([mine.list.key]);
    expect(keys).not.toContain(theirs.list.key);
  });

  it('counts only active people: after adds, confirmations through the API and unsubscribes', async () => {
    const f = await listFixture(ctx.api);
    const subscribers = async () => (await f.client.get('/api/v1/lists')).body.lists[0].subscribers;
    const [a, b, c] = [address(), address(), address()];
    await f.subscribe({ email: a, confirmed: true });
    await f.subscribe({ email: b });
    await f.subscribe({ email: c, confirmed: true });
    expect(await subscribers()).toBe(2);
    await f.subscribe({ email: b, confirmed: true });
    expect(await subscribers()).toBe(3);
    await f.unsubscribe({ email: a });
    await f.unsubscribe({ email: a });
    expect(await subscribers()).toBe(2);
  });

  it('answers 405 JSON for other methods', async () => {
    const f = await listFixture(ctx.api);
    const res = await f.client.post('/api/v1/lists').send({});
    expect(res.status).toBe(405);
    expect(res.body.ok).toBe(false);
  });
});
