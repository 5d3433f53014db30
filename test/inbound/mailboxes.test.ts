import { db } from '../../apps/core/src/db';
import { imapSettings } from '../../apps/core/src/mailboxes';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';

/** The mailbox's `imap` URL on the admin API: POST, PATCH, encrypted, never echoed, inbound state shown. */
const ctx = useApi();

describe('mailbox return_path (admin API, docs/inbound.md)', () => {
  it('is address by default, verp when set on create or by PATCH, and anything else is refused naming the field', async () => {
    const account = await makeAccount();
    const admin = asAdmin(ctx.api);
    const plain = await admin.post('/admin/api/mailboxes').send({ account: account.id, address: 'a@verp-api.test', smtp: 'smtp://u:p@127.0.0.1:2525' });
    expect(plain.body.mailbox.return_path).toBe('address');
    const verp = await admin.post('/admin/api/mailboxes').send({ account: account.id, address: 'b@verp-api.test', smtp: 'smtp://u:p@127.0.0.1:2525', return_path: 'verp' });
    expect(verp.body.mailbox.return_path).toBe('verp');
    const bad = await admin.patch(`/admin/api/mailboxes/${plain.body.mailbox.id}`).send({ return_path: 'bounce' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('return_path');
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: plain.body.mailbox.id } })).returnPath).toBe('address');
    const changed = await admin.patch(`/admin/api/mailboxes/${plain.body.mailbox.id}`).send({ return_path: 'verp' });
    expect(changed.body.mailbox.return_path).toBe('verp');
  });
});

describe('mailbox imap URL (admin API)', () => {
  it('is set on create and by PATCH, stored encrypted, never echoed, and refused when malformed without changing anything', async () => {
    const account = await makeAccount();
    const admin = asAdmin(ctx.api);
    const created = await admin.post('/admin/api/mailboxes').send({
      account: account.id,
      address: 'sales@imap-api.test',
      smtp: 'smtp://u:p@127.0.0.1:2525',
      imap: 'imaps://sales%40imap-api.test:s3cret-imap@imap.example.org',
    });
    expect(created.status).toBe(201);
    expect(created.body.mailbox.imap).toEqual({ host: 'imap.example.org', port: 993, secure: true, user: 'sales@imap-api.test' });
    expect(created.body.mailbox.inbound).toEqual({ state: 'starting', last_error: null, checked_at: null });
    expect(JSON.stringify(created.body)).not.toContain('s3cret-imap');
    const id = created.body.mailbox.id as number;
    const row = await db().mailbox.findUniqueOrThrow({ where: { id } });
    expect(row.imapPasswordEnc).not.toContain('s3cret-imap');
    expect(imapSettings(row)!.password).toBe('s3cret-imap');

    const bad = await admin.patch(`/admin/api/mailboxes/${id}`).send({ imap: 'http://nope' });
    expect(bad.status).toBe(400);
    expect(bad.body.ok).toBe(false);
    expect((await db().mailbox.findUniqueOrThrow({ where: { id } })).imapHost).toBe('imap.example.org');

    const changed = await admin.patch(`/admin/api/mailboxes/${id}`).send({ imap: 'imap://other:pw2@127.0.0.1:1143' });
    expect(changed.status).toBe(200);
    expect(changed.body.mailbox.imap).toEqual({ host: '127.0.0.1', port: 1143, secure: false, user: 'other' });
    expect(JSON.stringify(changed.body)).not.toContain('pw2');

    const off = await admin.patch(`/admin/api/mailboxes/${id}`).send({ imap: null });
    expect(off.body.mailbox).toMatchObject({ imap: null, inbound: { state: 'off' } });
    expect((await admin.patch('/admin/api/mailboxes/999999').send({ imap: null })).status).toBe(404);

    const listed = await admin.get('/admin/api/mailboxes');
    expect(listed.body.mailboxes.find((m: { id: number }) => m.id === id).inbound.state).toBe('off');
  });
});
