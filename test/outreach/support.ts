import type { Job } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { deliverMessage, type Delivery } from '../../apps/core/src/delivery/deliver';
import { addProspects, type ProspectInput } from '../../apps/core/src/outreach/prospects';
import type { JobPayloads } from '../../apps/core/src/queues';
import type { StepInput } from '../../apps/core/src/outreach/campaigns';
import { makeCampaign, makeTenant, wantEvents } from '../helpers/factories';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';

/** An account whose mailbox writes to `smtp`, with a campaign (running unless told otherwise). */
export async function outreach(options: { smtp: string; steps?: StepInput[]; status?: 'draft' | 'running' | 'paused'; mailbox?: { daily_limit?: number; gap_seconds?: number } }) {
  const tenant = await makeTenant({ prospects: true, smtp: options.smtp, mailbox: { daily_limit: 1000, gap_seconds: 0, ...options.mailbox } });
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, {
    status: options.status ?? 'running',
    steps: options.steps ?? [
      { subject: 'Hello {{name}}', body: 'Hi {{name}}', delay_hours: 0 },
      { subject: 'Hello {{name}}', body: 'Any news, {{name}}?', delay_hours: 1 },
    ],
  });
  return { tenant, campaign };
}

/** Adds through the core service (no API kick: nothing is queued, the test drives the engine). */
export async function addProspect(accountId: number, campaignId: number, input: ProspectInput): Promise<number> {
  const { answer } = await addProspects(db(), accountId, campaignId, [input]);
  const id = answer.prospects[0]!.id;
  if (id === null) throw new Error(`not added: ${answer.prospects[0]!.result}`);
  return id;
}

/** A stand-in for BullMQ's job, as a test calling a processor directly needs it. */
export const fakeJob = <T extends keyof JobPayloads>(data: JobPayloads[T]) => ({ id: 'test', data, attemptsMade: 0, opts: { attempts: 1 } }) as unknown as Job<JobPayloads[T]>;

/** One delivery attempt of the row, as a worker's job makes it with the file's delivery (useDelivery). */
export const deliver = (delivery: Delivery, messageId: string) => deliverMessage(delivery, messageId, { lastAttempt: false });

export const stepMessage = (prospectId: number, step: number) => db().message.findFirst({ where: { prospectId, step } });

/**
 * A running two-step campaign (step 2 48 hours after step 1) whose step 1 went out to `email` through the file's
 * delivery: what a reply answers (test/inbound/reader.test.ts, test/mx/replies.test.ts). Every event is wanted.
 */
export async function firstStepSent(delivery: Delivery, smtp: string, email: string) {
  const { tenant, campaign } = await outreach({
    smtp,
    steps: [
      { subject: 'Hello {{name}}', body: 'Hi', delay_hours: 0 },
      { subject: 'Hello {{name}}', body: 'Any news?', delay_hours: 48 },
    ],
  });
  await wantEvents(tenant.account.id);
  const prospectId = await addProspect(tenant.account.id, campaign.id, { email, name: 'Ann' });
  if ((await runSequenceStep(db(), prospectId, 1)).kind !== 'written') throw new Error('step 1 not written');
  await deliver(delivery, (await stepMessage(prospectId, 1))!.id);
  return { tenant, campaign, prospectId, first: (await stepMessage(prospectId, 1))! };
}
