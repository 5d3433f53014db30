import { checkSources, templateIdOf } from '../templates/service';
import type { Campaign, CampaignStep, Mailbox } from '../../../../generated/prisma/client';
import { mailboxStartRefusal } from '../domains/sending';
import type { CampaignGoal, CampaignStatus } from '../../../../generated/prisma/enums';
import { afterCommit } from '../after-commit';
import { Prisma, type Db, type Tx } from '../db';
import { scheduleOf, type Schedule } from './windows';
import { campaignMailboxes } from './repository/rotation';
import { lockCampaign } from './repository/prospects';
import { pinProspectPlaces } from './repository/paths';
import { conditionOf, END, graphRefusal, type Condition } from './branches';
import { weightsRefusal, type Variant, type WinnerRule } from '../experiments/variants';
import { endSequences } from './end';
import { rotationOf, saveRotation } from './rotation';
import { BadRequest, Forbidden, NotFound } from '../errors';
import { requireAccount } from '../accounts';
import { logger } from '../logger';
import { replanHeldSteps } from './replan';
import { scheduleDueSteps, startCampaignProspects } from './scheduler';

export const GOALS = ['links', 'sales', 'partners', 'press', 'hiring', 'reviews', 'winback', 'plain'] as const;
export const CAMPAIGN_STATUSES = ['draft', 'running', 'paused'] as const;

/** An email step, or (with `type: "condition"`) a branch (docs/outreach.md; branches.ts). */
export type StepInput = EmailStepInput | ConditionStepInput;

export interface EmailStepInput {
  /** the caller's id, which `then`, `else` and `next` name; its position when not given */
  id?: string;
  type?: 'email';
  subject?: string;
  body?: string;
  /** a stored template (id or alias), rendered instead of subject and body */
  template?: number | string;
  delay_hours: number;
  /** the step that follows, when not the next in the list */
  next?: string;
  /** A/B: each prospect gets one by a deterministic hash (experiments/) */
  variants?: Variant[];
  winner?: WinnerRule;
}

export interface ConditionStepInput extends Condition {
  id: string;
  type: 'condition';
}

const isCondition = (s: StepInput): s is ConditionStepInput => s.type === 'condition';

/**
 * The steps' rows: each template named resolved to the account's (400 otherwise), each body checked to parse, and the
 * graph checked (400 naming why: a branch to a step that does not exist, a cycle, weights that sum to 0).
 */
async function stepRows(db: Tx, accountId: number, steps: StepInput[]) {
  const rows = [];
  for (const [i, s] of steps.entries()) {
    const key = s.id ?? String(i + 1);
    if (isCondition(s)) {
      const condition = { if: s.if, within_hours: s.within_hours, then: s.then, else: s.else };
      rows.push({ position: i + 1, key, kind: 'condition', condition, next: null, subject: '', body: '', delayHours: 0, templateId: null });
      continue;
    }
    checkSources({ [`steps[${i}].subject`]: s.subject, [`steps[${i}].body`]: s.body });
    for (const [j, v] of (s.variants ?? []).entries()) checkSources({ [`steps[${i}].variants[${j}].subject`]: v.subject, [`steps[${i}].variants[${j}].body`]: v.body });
    const refusal = s.variants ? weightsRefusal(s.variants.map((v) => v.weight)) : null;
    if (refusal) throw new BadRequest(`steps[${i}].${refusal}`);
    const templateId = s.template === undefined ? null : await templateIdOf(db, accountId, s.template, `steps[${i}].template`);
    rows.push({
      position: i + 1,
      key,
      kind: 'email',
      condition: undefined,
      next: s.next ?? null,
      subject: s.subject ?? '',
      body: s.body ?? '',
      delayHours: s.delay_hours,
      templateId,
      ...(s.variants ? { variants: s.variants as unknown as Prisma.InputJsonValue } : {}),
      ...(s.winner ? { winner: s.winner as unknown as Prisma.InputJsonValue } : {}),
    });
  }
  const refusal = graphRefusal(rows.map((r) => ({ key: r.key, kind: r.kind, condition: r.condition ?? null, next: r.next })));
  if (refusal) throw new BadRequest(refusal);
  return rows;
}

/** A stored step as the API shows it (the input's shape). */
function stepView(s: CampaignStep): StepInput {
  const condition = conditionOf(s);
  if (condition) return { id: s.key, type: 'condition', ...condition };
  return {
    id: s.key,
    ...(s.variants ? {} : { subject: s.subject, body: s.body }),
    delay_hours: s.delayHours,
    ...(s.templateId !== null ? { template: s.templateId } : {}),
    ...(s.next !== null ? { next: s.next } : {}),
    ...(s.variants ? { variants: s.variants as unknown as Variant[] } : {}),
    ...(s.winner ? { winner: s.winner as unknown as WinnerRule } : {}),
  };
}

/** The Campaign of docs/api.md. */
export interface CampaignView {
  id: number;
  name: string;
  goal: string;
  status: string;
  prospects: number;
  stages: string[];
}

/** A links campaign's target (docs/links.md): the page the placed link must point to, and the anchor text wished for. */
export interface CampaignTarget {
  url: string;
  anchor?: string;
}

export interface CampaignDetail extends CampaignView {
  account: number;
  mailbox: number;
  /** docs/campaigns.md: the rotation, `mailbox` first; `retired`: taken out, still finishing the prospects it started */
  mailboxes: number[];
  retired_mailboxes: number[];
  steps: StepInput[];
  target: { url: string; anchor: string } | null;
  /** docs/outreach.md: the sending window; null = any time */
  schedule: Schedule | null;
  /** docs/outreach.md: auto-pause rates; null = never */
  pause_on: PauseOn | null;
  /** why the service paused the campaign; null when it did not */
  paused_reason: string | null;
  /** one-click opt-out in each outreach email */
  unsubscribe: boolean;
  /** docs/analytics.md: links of the steps' html go through the click counter */
  track_clicks: boolean;
}

export interface PauseOn {
  bounce_rate: number | null;
  complaint_rate: number | null;
  window: number;
}

export const DEFAULT_PAUSE_ON: PauseOn = { bounce_rate: 0.05, complaint_rate: 0.003, window: 100 };

/** A stored `pause_on` with the defaults under what was given. */
export function pauseOnOf(stored: unknown): PauseOn | null {
  if (!stored || typeof stored !== 'object') return null;
  return { ...DEFAULT_PAUSE_ON, ...(stored as Partial<PauseOn>) };
}

/** The deliverability settings of a campaign (docs/outreach.md), as columns. */
function deliverabilityColumns(input: { schedule?: Schedule | null; pause_on?: Partial<PauseOn> | null; unsubscribe?: boolean }) {
  return {
    ...(input.schedule !== undefined ? { schedule: input.schedule === null ? Prisma.DbNull : { ...input.schedule, days: [...input.schedule.days].sort() } } : {}),
    ...(input.pause_on !== undefined ? { pauseOn: input.pause_on === null ? Prisma.DbNull : { ...DEFAULT_PAUSE_ON, ...input.pause_on } } : {}),
    ...(input.unsubscribe !== undefined ? { unsubscribe: input.unsubscribe } : {}),
  };
}

export function campaignView(c: Campaign, prospects: number): CampaignView {
  return { id: c.id, name: c.name, goal: c.goal, status: c.status, prospects, stages: c.stages };
}

type Rotation = { mailbox_id: number; active: boolean }[];

function detail(c: Campaign & { steps: CampaignStep[] }, prospects: number, rotation: Rotation): CampaignDetail {
  const active = rotation.filter((r) => r.active).map((r) => r.mailbox_id);
  return {
    ...campaignView(c, prospects),
    account: c.accountId,
    mailbox: c.mailboxId,
    mailboxes: active.length ? active : [c.mailboxId],
    retired_mailboxes: rotation.filter((r) => !r.active).map((r) => r.mailbox_id),
    steps: c.steps.sort((a, b) => a.position - b.position).map(stepView),
    target: c.targetUrl === null ? null : { url: c.targetUrl, anchor: c.targetAnchor ?? '' },
    schedule: scheduleOf(c.schedule),
    pause_on: pauseOnOf(c.pauseOn),
    paused_reason: c.pausedReason,
    unsubscribe: c.unsubscribe,
    track_clicks: c.trackClicks,
  };
}

export interface NewCampaign {
  account: number;
  name: string;
  goal: CampaignGoal;
  mailbox?: number;
  mailboxes?: number[];
  stages?: string[];
  status?: CampaignStatus;
  steps: StepInput[];
  target?: CampaignTarget | null;
  schedule?: Schedule | null;
  pause_on?: Partial<PauseOn> | null;
  unsubscribe?: boolean;
  track_clicks?: boolean;
}

/** The target's columns; only a links campaign has one (400 otherwise). */
function targetColumns(goal: CampaignGoal, target: CampaignTarget | null | undefined): { targetUrl?: string | null; targetAnchor?: string | null } {
  if (target === undefined) return {};
  if (target === null) return { targetUrl: null, targetAnchor: null };
  if (goal !== 'links') throw new BadRequest(`target: only a links campaign has a target, not a ${goal} campaign`);
  return { targetUrl: target.url, targetAnchor: target.anchor ?? '' };
}

export async function createCampaign(db: Tx, input: NewCampaign): Promise<CampaignDetail> {
  await requireAccount(db, input.account);
  const rotation = rotationOf(input);
  if (!rotation) throw new BadRequest('give mailbox or mailboxes');
  await requireRotation(db, input.account, rotation);
  if (input.status === 'running') await refuseUnverifiedStart(db, rotation);
  const steps = await stepRows(db, input.account, input.steps);
  const campaign = await db.campaign.create({
    data: {
      accountId: input.account,
      mailboxId: rotation[0]!,
      name: input.name,
      goal: input.goal,
      status: input.status ?? 'draft',
      stages: input.stages ?? [],
      ...targetColumns(input.goal, input.target),
      ...deliverabilityColumns(input),
      trackClicks: input.track_clicks ?? false,
      steps: { create: steps },
    },
    include: { steps: true },
  });
  await saveRotation(db, campaign.id, rotation);
  return detail(campaign, 0, await campaignMailboxes(db, campaign.id));
}

/** Every mailbox of a rotation must be the account's: another account's (or none) is refused, 400, naming it. */
async function requireRotation(db: Tx, account: number, mailboxes: number[]): Promise<void> {
  const found = await db.mailbox.findMany({ where: { id: { in: mailboxes }, accountId: account }, select: { id: true } });
  const known = new Set(found.map((m) => m.id));
  const missing = mailboxes.find((id) => !known.has(id));
  if (missing !== undefined) throw new BadRequest(`mailboxes: no mailbox with id ${missing} in account ${account}`);
}

export interface CampaignChanges {
  name?: string;
  goal?: CampaignGoal;
  mailbox?: number;
  mailboxes?: number[];
  stages?: string[];
  status?: CampaignStatus;
  steps?: StepInput[];
  target?: CampaignTarget | null;
  schedule?: Schedule | null;
  pause_on?: Partial<PauseOn> | null;
  unsubscribe?: boolean;
  track_clicks?: boolean;
}

/** REQUIRE_VERIFIED_DOMAIN: a campaign from a mailbox of an unverified domain does not start (docs/domains.md). */
/** REQUIRE_VERIFIED_DOMAIN: a campaign starts only when every mailbox of its rotation sends from a verified domain (403). */
async function refuseUnverifiedStart(db: Tx, mailboxes: number[]): Promise<void> {
  for (const mailbox of await db.mailbox.findMany({ where: { id: { in: mailboxes } }, orderBy: { id: 'asc' } })) {
    const refusal = await mailboxStartRefusal(db, mailbox);
    if (refusal) throw new Forbidden(refusal);
  }
}

/** Applies the changes; the caller runs it in a transaction with whatever a status change must also do. */
export async function updateCampaign(db: Tx, id: number, changes: CampaignChanges): Promise<{ before: Campaign; after: CampaignDetail }> {
  // one change of a campaign at a time: two replacing its steps at once would collide on (campaign, position)
  await lockCampaign(db, id);
  const before = await db.campaign.findUnique({ where: { id } });
  if (!before) throw new NotFound(`no campaign with id ${id}`);
  const rotation = rotationOf(changes);
  if (rotation) {
    await requireRotation(db, before.accountId, rotation);
    await saveRotation(db, id, rotation);
  }
  if (changes.status === 'running' && before.status !== 'running') {
    const mailboxes = rotation ?? (await campaignMailboxes(db, id)).filter((m) => m.active).map((m) => m.mailbox_id);
    await refuseUnverifiedStart(db, mailboxes.length ? mailboxes : [before.mailboxId]);
  }
  if (changes.steps) {
    const rows = await stepRows(db, before.accountId, changes.steps);
    // each prospect under way keeps its place by key; a prospect at a step removed ends its path, with that reason
    await pinProspectPlaces(db, id);
    await db.campaignStep.deleteMany({ where: { campaignId: id } });
    await db.campaignStep.createMany({ data: rows.map((s) => ({ ...s, campaignId: id, condition: s.condition ?? undefined })) });
    const kept = [...rows.map((r) => r.key), END];
    await endSequences(db, { campaignId: id, status: { in: ['ready', 'writing', 'later', 'hold'] }, node: { notIn: kept } }, { status: 'lost', reason: 'step_removed' }, new Date());
  }
  const campaign = await db.campaign.update({
    where: { id },
    data: {
      name: changes.name,
      goal: changes.goal,
      mailboxId: rotation?.[0],
      stages: changes.stages,
      status: changes.status,
      trackClicks: changes.track_clicks,
      ...targetColumns(changes.goal ?? before.goal, changes.target),
      ...deliverabilityColumns(changes),
      // resuming clears the service's reason for a pause and starts a new auto-pause window
      ...(changes.status === 'running' && before.status !== 'running' ? { pausedReason: null, windowSince: new Date() } : {}),
    },
    include: { steps: true },
  });
  // running: new prospects get step 1 scheduled (the schedule task sends what is due). paused: the scheduler, the
  // step writer and the pre-send guard all stop at once. Resuming: prospects under way continue where they stopped.
  if (campaign.status === 'running' && before.status !== 'running') await startCampaignProspects(db, id);
  // steps held by the old window are planned again under the new one (docs/outreach.md)
  if (changes.schedule !== undefined) await replanHeldSteps(db, { campaignId: id });
  const prospects = await db.prospect.count({ where: { campaignId: id } });
  return { before, after: detail(campaign, prospects, await campaignMailboxes(db, id)) };
}

/**
 * The admin change of a campaign: the update in one transaction, then, when it starts or resumes running, its due steps
 * are queued at once rather than at the next tick of the schedule task (which stays the safety net if Redis is away).
 */
export async function changeCampaign(db: Db, id: number, changes: CampaignChanges): Promise<CampaignDetail> {
  const { before, after } = await db.$transaction((tx) => updateCampaign(tx, id, changes));
  if (after.status === 'running' && (before.status !== 'running' || changes.schedule !== undefined)) {
    // the scheduler reads committed rows
    await afterCommit(db, (committed) =>
      scheduleDueSteps(committed, { campaignId: id }).catch((err: Error) => logger.warn({ err: err.message, campaign: id }, 'could not queue due steps now; the schedule task will')),
    );
  }
  return after;
}

export async function listCampaigns(db: Tx, account: number): Promise<CampaignView[]> {
  const campaigns = await db.campaign.findMany({ where: { accountId: account }, orderBy: { id: 'asc' } });
  const counts = await db.prospect.groupBy({
    by: ['campaignId'],
    where: { campaignId: { in: campaigns.map((c) => c.id) } },
    _count: { _all: true },
  });
  const byCampaign = new Map(counts.map((c) => [c.campaignId, c._count._all]));
  return campaigns.map((c) => campaignView(c, byCampaign.get(c.id) ?? 0));
}

/** One campaign with its steps and prospect count (the admin API's read and the console's campaign page), or NotFound. */
export async function getCampaign(db: Tx, id: number): Promise<CampaignDetail> {
  const campaign = await db.campaign.findUnique({ where: { id }, include: { steps: true } });
  if (!campaign) throw new NotFound(`no campaign with id ${id}`);
  return detail(campaign, await db.prospect.count({ where: { campaignId: id } }), await campaignMailboxes(db, id));
}
