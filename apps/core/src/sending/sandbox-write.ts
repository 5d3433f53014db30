import type { Prisma } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { IDEMPOTENCY_TTL_MS } from '../idempotency';
import { insertRecordIfAbsent } from '../idempotency/repository';
import { messageRow } from '../delivery/outbox';
import { skippedRecipients } from './repository';
import type { AcceptedWrite, SendToWrite } from './write';

/**
 * The write of a test key's send (docs/sandbox.md): the same checks and rows as a live send's (sending/write.ts), the
 * Send marked `sandbox` so that its messages go to the sandbox's sink (sandbox/sink.ts), and nothing counted against
 * the key's daily limit (`used` is 0). A transaction of a few statements: test sends are not the hot path, and live sends never come here.
 */
export class SandboxWriter {
  constructor(private readonly db: Db) {}

  async write(send: SendToWrite): Promise<AcceptedWrite> {
    const { key, mailbox, request, sendId, messageIdHeader } = send;
    return this.db.$transaction(async (tx) => {
      // a submitted message's key, taken as the live write takes it (sending/repository.ts WRITE_CLAIMED_SENDS)
      const claimed = send.claim
        ? await insertRecordIfAbsent(tx, { apiKeyId: key.id, route: send.claim.route, key: send.claim.key }, send.claim.fingerprint, new Date(Date.now() + IDEMPOTENCY_TTL_MS), {
            status: 202,
            body: { ok: true, id: sendId, status: 'queued' },
          })
        : undefined;
      const claim = claimed === undefined ? {} : { claimed };
      if (claimed === null) return { used: null, kept: [], skipped: [], stale: false, ...claim };
      const skipped = await skippedRecipients(tx, key.accountId, request.to);
      const left = new Set(skipped.map((s) => s.to));
      const rows = request.to
        .filter((to) => !left.has(to))
        .map((to) => ({ ...messageRow({ accountId: key.accountId, mailboxId: mailbox.id, fromAddress: mailbox.address, kind: 'transactional', sendId, to, subject: request.subject, notBefore: request.sendAt }), ...(messageIdHeader ? { messageIdHeader } : {}), enqueuedAt: new Date() }));
      if (!rows.length) return { used: 0, kept: [], skipped, stale: false, ...claim };
      await tx.send.create({
        data: {
          id: sendId,
          accountId: key.accountId,
          apiKeyId: key.id,
          fromName: request.fromName,
          replyTo: request.replyTo,
          subject: request.subject,
          text: request.text,
          html: request.html,
          headers: request.headers,
          attachments: request.attachments as unknown as Prisma.InputJsonValue,
          metadata: request.metadata as Prisma.InputJsonValue,
          skipped: skipped as unknown as Prisma.InputJsonValue,
          sendAt: request.sendAt,
          raw: send.raw ? new Uint8Array(send.raw) : null,
          headerFrom: send.headerFrom ?? null,
          sandbox: true,
        },
      });
      await tx.message.createMany({ data: rows });
      const kept = rows.map((r) => ({ id: r.id!, to: r.to }));
      if (send.idempotencyRecord !== undefined) {
        const answer = { ok: true, id: sendId, status: 'queued', messages: kept.map((k) => ({ ...k, status: 'queued' })), skipped };
        await tx.idempotencyRecord.updateMany({ where: { id: send.idempotencyRecord }, data: { state: 'done', responseStatus: 202, responseBody: answer } });
      }
      return { used: 0, kept, skipped, stale: false, ...claim };
    });
  }
}
