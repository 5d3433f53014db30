import type { Prisma } from '../../../../generated/prisma/client';
import type { Tx } from '../db';

/**
 * The consent ledger's writes (docs/preferences.md): one row per change of a subscriber's consent, written by the
 * transaction that makes the change (the subscriber state machine, the confirmation, the preference page, the import's
 * statements), so the ledger never shows a change that rolled back and never misses one that committed.
 */

export type ConsentKind = 'subscribe' | 'confirm' | 'topics' | 'pause' | 'name' | 'unsubscribe' | 'import' | 'suppression';
/** Where a change came from: the hosted form, an API key, an import, a one-click post, the preference page, the operator, mail (a bounce or a complaint). */
export type ConsentSource = 'form' | 'api_key' | 'import' | 'one_click' | 'preference_page' | 'admin' | 'mail';

/** Who asked for a change and what they were shown: handed down by the route to the domain function making it. */
export interface ConsentContext {
  source: ConsentSource;
  ip?: string;
  /** the text of the form or page shown when the person acted */
  formText?: string;
}

/** Writes one ledger row in the caller's transaction. */
export async function recordConsent(tx: Tx, subscriberId: number, kind: ConsentKind, context: ConsentContext, detail: Record<string, unknown> = {}): Promise<void> {
  await tx.consentEvent.create({
    data: { subscriberId, kind, source: context.source, ip: context.ip ?? '', formText: context.formText ?? '', detail: detail as Prisma.InputJsonValue },
  });
}

/**
 * The ledger rows of the subscribers in `rows` (a relation with `id` and the columns the caller names), as a CTE of a
 * one-statement write (the API's fast add, an import): `kind`, `source`, `ip` and `detail` are SQL expressions over
 * `r` (`formText` too: the page the person was shown, empty unless named).
 */
export const recordConsentSql = (rows: string, kind: string, source: string, ip: string, detail: string, formText = `''`) => `
  INSERT INTO consent_events (subscriber_id, kind, source, ip, form_text, detail)
  SELECT r.id, ${kind}::"ConsentKind", ${source}::"ConsentSource", ${ip}, ${formText}, ${detail}
  FROM ${rows} r
  RETURNING 1`;

/** Writes one `suppression` row for each of these subscriptions (a bounce or a complaint moved them). */
export async function recordSuppressions(tx: Tx, subscriberIds: number[], reason: string, detail: string): Promise<void> {
  if (!subscriberIds.length) return;
  await tx.consentEvent.createMany({
    data: subscriberIds.map((subscriberId) => ({ subscriberId, kind: 'suppression' as const, source: 'mail' as const, detail: { reason, detail } })),
  });
}

export interface ConsentRow {
  id: bigint;
  kind: ConsentKind;
  source: ConsentSource;
  ip: string;
  formText: string;
  detail: Prisma.JsonValue;
  createdAt: Date;
}

/** A subscriber's ledger, oldest first (the order the story happened in). */
export function consentRows(tx: Tx, subscriberId: number): Promise<ConsentRow[]> {
  return tx.consentEvent.findMany({ where: { subscriberId }, orderBy: { id: 'asc' } }) as Promise<ConsentRow[]>;
}
