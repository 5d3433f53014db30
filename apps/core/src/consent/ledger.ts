import type { Db } from '../db';
import { NotFound } from '../errors';
import { consentRows, type ConsentRow } from './repository';

/**
 * A subscriber's consent ledger as the operator reads it (GET /admin/api/subscribers/:id/consent) and as a
 * data-protection request is answered (the export: everything held on the person, with the ledger).
 */
export interface ConsentEntry {
  id: string;
  at: string;
  kind: ConsentRow['kind'];
  source: ConsentRow['source'];
  ip: string;
  form_text: string;
  detail: unknown;
}

const entryOf = (row: ConsentRow): ConsentEntry => ({
  id: row.id.toString(),
  at: row.createdAt.toISOString(),
  kind: row.kind,
  source: row.source,
  ip: row.ip,
  form_text: row.formText,
  detail: row.detail,
});

/** The subscriber (by id) and their ledger, oldest first; 404 for an unknown id. */
export async function subscriberConsent(db: Db, id: number) {
  const subscriber = await db.subscriber.findUnique({ where: { id }, include: { list: { select: { key: true, name: true } } } });
  if (!subscriber) throw new NotFound(`no subscriber with id ${id}`);
  const entries = (await consentRows(db, id)).map(entryOf);
  return {
    subscriber: {
      id: subscriber.id,
      list: subscriber.list.key,
      list_name: subscriber.list.name,
      email: subscriber.email,
      name: subscriber.name,
      status: subscriber.status,
      tags: subscriber.tags,
      fields: subscriber.fields,
      topics: subscriber.topics,
      paused_until: subscriber.pausedUntil?.toISOString() ?? null,
      consent_source: subscriber.consentSource,
      consent_at: subscriber.consentAt?.toISOString() ?? null,
      confirmed_at: subscriber.confirmedAt?.toISOString() ?? null,
      unsubscribed_at: subscriber.unsubscribedAt?.toISOString() ?? null,
      created_at: subscriber.createdAt.toISOString(),
    },
    consent: entries,
  };
}

/** The export of a data-protection request: what is held on the subscriber and every consent step, as one JSON document. */
export async function consentExport(db: Db, id: number) {
  return { exported_at: new Date().toISOString(), ...(await subscriberConsent(db, id)) };
}
