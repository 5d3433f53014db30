import crypto from 'node:crypto';
import type { Webhook } from '../../../../generated/prisma/client';
import { config } from '../config';
import { decryptSecret, encryptSecret } from '../crypto';
import type { Tx } from '../db';
import { NotFound } from '../errors';
import { iso } from '../validate';
import { requireAccount } from '../accounts';
import type { WebhookChanges, WebhookInput } from './schema';
import { accountWhere, type AccountScope } from '../account-scope';

/** How long the secret before a rotation keeps signing deliveries, next to the new one. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

export interface WebhookView {
  id: number;
  account: number;
  url: string;
  events: string[];
  enabled: boolean;
  /** why the service disabled it ("" when enabled or disabled by the operator) */
  disabled_reason: string;
  last_success_at: string | null;
  failing_since: string | null;
  created_at: string | null;
}

export function webhookView(w: Webhook): WebhookView {
  return {
    id: w.id,
    account: w.accountId,
    url: w.url,
    events: w.events,
    enabled: w.enabled,
    disabled_reason: w.disabledReason,
    last_success_at: iso(w.lastSuccessAt),
    failing_since: iso(w.failingSince),
    created_at: iso(w.createdAt),
  };
}

/** `whsec_` + base64 of 32 random bytes: the form Standard Webhooks libraries take as is. */
export function newSecret(): string {
  return 'whsec_' + crypto.randomBytes(32).toString('base64');
}

const seal = (secret: string) => encryptSecret(secret, config().secretKey);

export async function createWebhook(db: Tx, input: WebhookInput): Promise<WebhookView & { secret: string }> {
  await requireAccount(db, input.account);
  const secret = newSecret();
  const webhook = await db.webhook.create({
    data: { accountId: input.account, url: input.url, events: input.events ?? ['*'], secretEnc: seal(secret) },
  });
  return { ...webhookView(webhook), secret };
}

export async function listWebhooks(db: Tx, account?: AccountScope): Promise<WebhookView[]> {
  const rows = await db.webhook.findMany({ where: accountWhere(account), orderBy: { id: 'asc' } });
  return rows.map(webhookView);
}

async function requireWebhook(db: Tx, id: number): Promise<Webhook> {
  const webhook = await db.webhook.findUnique({ where: { id } });
  if (!webhook) throw new NotFound(`no webhook ${id}`);
  return webhook;
}

export async function getWebhook(db: Tx, id: number): Promise<WebhookView> {
  return webhookView(await requireWebhook(db, id));
}

/** Enabling again (by the operator) clears the failure record that disabled it: it gets three fresh days. */
export async function changeWebhook(db: Tx, id: number, changes: WebhookChanges): Promise<WebhookView> {
  await requireWebhook(db, id);
  const reenable = changes.enabled === true ? { disabledReason: '', failingSince: null } : {};
  const webhook = await db.webhook.update({ where: { id }, data: { ...changes, ...reenable } });
  return webhookView(webhook);
}

/** A new secret; the old one keeps signing for ROTATION_OVERLAP_MS so receivers can switch without losing a delivery. */
export async function rotateSecret(db: Tx, id: number, now = new Date()): Promise<WebhookView & { secret: string }> {
  const current = await requireWebhook(db, id);
  const secret = newSecret();
  const webhook = await db.webhook.update({
    where: { id },
    data: { secretEnc: seal(secret), previousSecretEnc: current.secretEnc, previousUntil: new Date(now.getTime() + ROTATION_OVERLAP_MS) },
  });
  return { ...webhookView(webhook), secret };
}

export async function deleteWebhook(db: Tx, id: number): Promise<void> {
  await requireWebhook(db, id);
  await db.webhook.delete({ where: { id } });
}

/** The secrets that sign a delivery now: the current one, and the previous one during a rotation's overlap. */
export function signingSecrets(webhook: Webhook, now = new Date()): string[] {
  const secrets = [decryptSecret(webhook.secretEnc, config().secretKey)];
  if (webhook.previousSecretEnc && webhook.previousUntil && webhook.previousUntil > now) {
    secrets.push(decryptSecret(webhook.previousSecretEnc, config().secretKey));
  }
  return secrets;
}

export interface DeliveryView {
  event_id: string;
  type: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  at: string | null;
}

export async function listDeliveries(db: Tx, id: number, limit: number): Promise<DeliveryView[]> {
  await requireWebhook(db, id);
  const rows = await db.webhookDelivery.findMany({ where: { webhookId: id }, orderBy: [{ at: 'desc' }, { id: 'desc' }], take: limit });
  return rows.map((r) => ({ event_id: r.eventId, type: r.type, attempt: r.attempt, status_code: r.statusCode, error: r.error, at: iso(r.at) }));
}
