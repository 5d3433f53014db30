import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { embedSnippet } from '../../apps/core/src/subscribers/html';
import { asAdmin, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';

const server = useApi();

describe('the list object carries its hosted form address (form_url)', () => {
  it('in the answers of create, read and change; the address and the embed snippet reach the form', async () => {
    const tenant = await makeTenant();
    const created = await asAdmin(server.api).post('/admin/api/lists').send({ account: tenant.account.id, name: 'News', confirm: true, mailbox: tenant.mailbox.id });
    expect(created.status).toBe(201);
    const { key, id } = created.body.list as { key: string; id: number };
    const formUrl = `http://mail.test/f/${key}`; // PUBLIC_URL of the tests
    expect(created.body.list.form_url).toBe(formUrl);
    expect((await asAdmin(server.api).get(`/admin/api/lists/${id}`)).body.list).toMatchObject({ id, form_url: formUrl });
    expect((await asAdmin(server.api).patch(`/admin/api/lists/${id}`).send({ name: 'Weekly' })).body.list).toMatchObject({ name: 'Weekly', form_url: formUrl });

    const path = new URL(formUrl).pathname;
    const page = await request(server.api.app).get(path);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Subscribe to Weekly');

    // the snippet posts to the form address the fields the hosted form reads, the honeypot among them
    const snippet = embedSnippet(formUrl);
    expect(snippet).toContain(`action="${formUrl}"`);
    const names = [...snippet.matchAll(/name="([^"]+)"/g)].map((m) => m[1]);
    expect(names).toEqual(['email', 'name', 'website']);
    const posted = await request(server.api.app).post(path).type('form').send({ email: 'reader@example.com', name: 'Reader', website: '' });
    expect(posted.status).toBe(200);
    expect(await db().subscriber.findUnique({ where: { listId_email: { listId: id, email: 'reader@example.com' } } })).toMatchObject({ status: 'pending' });
    // the honeypot filled, as a bot would: answered alike, nothing stored
    const bot = await request(server.api.app).post(path).type('form').send({ email: 'bot@example.com', name: '', website: 'http://spam' });
    expect(bot.status).toBe(200);
    expect(await db().subscriber.findUnique({ where: { listId_email: { listId: id, email: 'bot@example.com' } } })).toBeNull();
  });
});
