import type { Db } from '../db';
import { BadRequest, NotFound } from '../errors';
import { enqueueDelivery, storeMessages } from '../delivery/outbox';
import { previewTemplate } from '../templates/service';

/**
 * POST /admin/api/templates/:id/test {to, variables, mailbox?}: one email rendered as a send would render it, from the
 * given mailbox of the template's account (its first mailbox when none is named), delivered by the worker like any
 * other. Answers the message's id and status.
 */
export async function sendTestEmail(db: Db, id: number, input: { to: string; variables: Record<string, unknown>; mailbox?: number }): Promise<{ id: string; to: string; subject: string; status: 'queued' }> {
  const template = await db.template.findUnique({ where: { id } });
  if (!template) throw new NotFound(`no template with id ${id}`);
  if (template.kind === 'layout') throw new BadRequest('a layout is sent through a template that uses it');
  const email = await previewTemplate(db, id, input.variables);
  if (!email.subject) throw new BadRequest('the subject renders empty');
  const mailbox = await db.mailbox.findFirst({ where: { accountId: template.accountId, ...(input.mailbox ? { id: input.mailbox } : {}) }, orderBy: { id: 'asc' } });
  if (!mailbox) throw new BadRequest(input.mailbox ? `mailbox: no mailbox ${input.mailbox} in the template's account` : "mailbox: the template's account has no mailbox");
  const to = input.to.toLowerCase();
  const [row] = await storeMessages(db, [
    { accountId: template.accountId, mailboxId: mailbox.id, fromAddress: mailbox.address, kind: 'transactional', to, subject: email.subject.slice(0, 998), html: email.html, text: email.text },
  ]);
  await enqueueDelivery(db, [{ id: row!.id as string }]);
  return { id: row!.id as string, to, subject: email.subject, status: 'queued' };
}
