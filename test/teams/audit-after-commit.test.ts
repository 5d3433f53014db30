import { randomUUID } from 'node:crypto';
import { afterCommit } from '../../apps/core/src/after-commit';
import { auditedChange, type AuditContext } from '../../apps/core/src/audit';
import { db } from '../../apps/core/src/db';
import { Conflict } from '../../apps/core/src/errors';
import { QUEUE, jobId, queue } from '../../apps/core/src/queues';
import { asAdmin, useApi } from '../helpers/api';
import { makeList, makeTenant } from '../helpers/factories';

/**
 * A change that reaches Redis (a job queued, promoted or removed, a cache dropped) writes its audit entry in the
 * transaction of its Postgres part, and its Redis part runs once both are committed (core/after-commit.ts,
 * docs/teams.md): a refused change leaves no entry and touches no job, an applied one always has its entry, and a
 * worker never sees a job before its row.
 */
jest.setTimeout(120_000);

const ctx = useApi();

const context = (requestId: string): AuditContext => ({ actor: { kind: 'admin-token', label: 'admin token' }, via: 'admin-api', requestId });
const entriesOf = (requestId: string) => db().auditEntry.findMany({ where: { requestId } });

describe('auditedChange with work after commit', () => {
  it('runs the work once the change and its entry are committed: another connection sees both then, neither before', async () => {
    const tenant = await makeTenant();
    const requestId = `after-${randomUUID()}`;
    const seen: { during?: number; after?: { entries: number; name: string | null } } = {};
    await auditedChange(db(), context(requestId), { action: 'update', resource: 'mailbox', id: tenant.mailbox.id, account: tenant.account.id }, async (tx) => {
      await tx.mailbox.update({ where: { id: tenant.mailbox.id }, data: { name: 'renamed' } });
      await afterCommit(tx, async (committed) => {
        // `committed` is outside the transaction: what it reads is what every other connection reads
        seen.after = { entries: await committed.auditEntry.count({ where: { requestId } }), name: (await committed.mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } })).name };
      });
      seen.during = await db().auditEntry.count({ where: { requestId } });
    });
    expect(seen.during).toBe(0);
    expect(seen.after).toEqual({ entries: 1, name: 'renamed' });
  });

  it('a change refused after its work was handed on runs none of it and writes no entry', async () => {
    const tenant = await makeTenant();
    const requestId = `refused-${randomUUID()}`;
    let ran = false;
    const refused = auditedChange(db(), context(requestId), { action: 'update', resource: 'mailbox', id: tenant.mailbox.id, account: tenant.account.id }, async (tx) => {
      await tx.mailbox.update({ where: { id: tenant.mailbox.id }, data: { name: 'never' } });
      await afterCommit(tx, async () => {
        ran = true;
      });
      throw new Conflict('refused after the fact');
    });
    await expect(refused).rejects.toThrow('refused after the fact');
    expect(ran).toBe(false);
    expect(await entriesOf(requestId)).toHaveLength(0);
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } })).name).not.toBe('never');
  });

  it('an applied change whose Redis part fails keeps its entry: the failure is answered, the change is committed', async () => {
    const tenant = await makeTenant();
    const requestId = `failed-after-${randomUUID()}`;
    const applied = auditedChange(db(), context(requestId), { action: 'update', resource: 'mailbox', id: tenant.mailbox.id, account: tenant.account.id }, async (tx) => {
      await tx.mailbox.update({ where: { id: tenant.mailbox.id }, data: { name: 'applied' } });
      await afterCommit(tx, () => Promise.reject(new Error('Redis went away')));
    });
    await expect(applied).rejects.toThrow('Redis went away');
    expect(await entriesOf(requestId)).toHaveLength(1);
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } })).name).toBe('applied');
  });
});

describe('the admin API', () => {
  it('retries a failed message: one entry with the row, and its job queued; a refused retry writes none and queues nothing', async () => {
    const tenant = await makeTenant();
    const send = (to: string) => asAdmin(ctx.api).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send({ from: tenant.mailbox.address, to, subject: 's', text: 't' }).expect(202);
    await send('failed@example.com');
    await send('queued@example.com');
    const failed = await db().message.findFirstOrThrow({ where: { accountId: tenant.account.id, to: 'failed@example.com' } });
    const queued = await db().message.findFirstOrThrow({ where: { accountId: tenant.account.id, to: 'queued@example.com' } });
    await db().message.update({ where: { id: failed.id }, data: { status: 'failed' } });
    const job = () => queue(QUEUE.delivery).getJob(jobId.delivery(failed.id));
    await (await job())?.remove();

    const refusedId = `retry-refused-${randomUUID()}`;
    const refused = await asAdmin(ctx.api).post(`/admin/api/messages/${queued.id}/retry`).set('X-Request-Id', refusedId);
    expect(refused.status).toBe(409);
    expect(await entriesOf(refusedId)).toHaveLength(0);

    const requestId = `retry-${randomUUID()}`;
    const retried = await asAdmin(ctx.api).post(`/admin/api/messages/${failed.id}/retry`).set('X-Request-Id', requestId);
    expect(retried.status).toBe(200);
    expect(retried.body.message).toEqual({ id: failed.id, status: 'queued' });
    const entries = await entriesOf(requestId);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: 'retry', resource: 'message', resourceId: failed.id, accountId: tenant.account.id });
    expect((await db().message.findUniqueOrThrow({ where: { id: failed.id } })).status).toBe('queued');
    expect(await job()).toBeDefined();
  });

  it('pauses and resumes a broadcast: each an entry, the resume queues its job; a move its status refuses writes none', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id);
    const admin = asAdmin(ctx.api);
    const broadcast = (await admin.post('/admin/api/broadcasts').send({ list: list.key, subject: 'News', text: 'Hi' }).expect(201)).body.broadcast;
    const patch = (status: string, requestId: string) => admin.patch(`/admin/api/broadcasts/${broadcast.id}`).set('X-Request-Id', requestId).send({ status });

    const refusedId = `pause-draft-${randomUUID()}`;
    expect((await patch('paused', refusedId)).status).toBe(409);
    expect(await entriesOf(refusedId)).toHaveLength(0);

    const startId = `start-${randomUUID()}`;
    expect((await patch('sending', startId)).status).toBe(200);
    const pauseId = `pause-${randomUUID()}`;
    expect((await patch('paused', pauseId)).status).toBe(200);
    // each run of a broadcast has its own job (`bc-<id>-<run>`): the resume is its second
    const secondRun = () => queue(QUEUE.broadcast).getJob(jobId.broadcast(broadcast.id, 2));
    expect(await secondRun()).toBeUndefined();
    const resumeId = `resume-${randomUUID()}`;
    expect((await patch('sending', resumeId)).status).toBe(200);
    for (const [id, status] of [[startId, 'sending'], [pauseId, 'paused'], [resumeId, 'sending']] as const) {
      const entries = await entriesOf(id);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ action: 'update', resource: 'broadcast', resourceId: String(broadcast.id), accountId: tenant.account.id, after: { status } });
    }
    expect(await secondRun()).toBeDefined();
  });
});
