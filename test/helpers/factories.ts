import crypto from 'node:crypto';
import { db } from '../../apps/core/src/db';
import { createAccount } from '../../apps/core/src/accounts';
import { createCampaign, type NewCampaign } from '../../apps/core/src/outreach/campaigns';
import { createKey } from '../../apps/core/src/auth/keys';
import { createList } from '../../apps/core/src/subscribers/lists';
import { createMailbox } from '../../apps/core/src/mailboxes';
import { createWebhook } from '../../apps/core/src/webhooks/service';

/** Factories over the core services: each call makes fresh rows, so tests in one database never collide. */
const unique = () => crypto.randomBytes(4).toString('hex');

export async function makeAccount(name = `account ${unique()}`) {
  return createAccount(db(), { name });
}

/**
 * An enabled endpoint of the account for every event type: events are written only for an account with an endpoint
 * that wants them (events/repository.ts `subscribed`). Its URL answers nothing; no test that calls this runs a webhook worker.
 */
export async function wantEvents(account: number, events?: string[]) {
  return createWebhook(db(), { account, url: 'http://127.0.0.1:9/events', events: events as never });
}

export async function makeMailbox(account: number, options: { smtp?: string; address?: string; daily_limit?: number; gap_seconds?: number } = {}) {
  return createMailbox(db(), {
    account,
    address: options.address ?? `sender-${unique()}@example.com`,
    name: 'Sender',
    smtp: options.smtp ?? 'smtp://127.0.0.1:2525',
    daily_limit: options.daily_limit,
    gap_seconds: options.gap_seconds,
  });
}

export async function makeKey(account: number, mailbox: number, options: { daily_limit?: number; prospects?: boolean } = {}) {
  return createKey(db(), {
    account,
    mailbox,
    name: `key ${unique()}`,
    daily_limit: options.daily_limit ?? 1000,
    prospects: options.prospects ?? false,
  });
}

export async function makeList(account: number, mailbox: number, options: { confirm?: boolean; name?: string } = {}) {
  return createList(db(), { account, mailbox, name: options.name ?? `list ${unique()}`, confirm: options.confirm ?? true });
}

export async function makeCampaign(account: number, mailbox: number, options: Partial<Omit<NewCampaign, 'account' | 'mailbox'>> = {}) {
  return createCampaign(db(), {
    account,
    mailbox,
    name: options.name ?? `campaign ${unique()}`,
    goal: options.goal ?? 'links',
    status: options.status,
    stages: options.stages,
    target: options.target,
    steps: options.steps ?? [
      { subject: 'Hello {{name}}', body: 'Hi {{name}}, about {{site}}', delay_hours: 0 },
      { subject: 'Following up', body: 'Any thoughts, {{name}}?', delay_hours: 48 },
    ],
  });
}

export interface Tenant {
  account: { id: number; name: string };
  mailbox: Awaited<ReturnType<typeof makeMailbox>>;
  token: string;
  keyId: number;
}

/** An account with a mailbox and a key: the usual starting point of an API test. */
export async function makeTenant(options: { smtp?: string; daily_limit?: number; prospects?: boolean; mailbox?: { daily_limit?: number; gap_seconds?: number } } = {}): Promise<Tenant> {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id, { smtp: options.smtp, ...options.mailbox });
  const { key, token } = await makeKey(account.id, mailbox.id, { daily_limit: options.daily_limit, prospects: options.prospects });
  return { account, mailbox, token, keyId: key.id };
}
