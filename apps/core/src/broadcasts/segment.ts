import type { Broadcast } from '../../../../generated/prisma/client';
import type { Tx } from '../db';
import { BadRequest, NotFound } from '../errors';
import { iso } from '../validate';
import { countAudience, foreignBroadcasts, unknownFields, type AudienceRule } from './repository';
import type { AudienceInput } from './schema';
import { requireTopics } from '../topics';

/**
 * A broadcast's segment (docs/broadcasts.md): `audience` as the admin API takes it, kept as the broadcast's `tags`
 * and `segment` (fields, engagement, dates), and turned into the one rule the snapshot and the dry run both apply
 * (repository.ts audienceCondition).
 */
export type StoredSegment = Omit<AudienceInput, 'tags' | 'subscribed_after' | 'subscribed_before'> & { subscribed_after?: string; subscribed_before?: string };

/** Refuses (400, nothing changed) a segment naming a field no subscriber of the list has, or a broadcast of another account. */
export async function checkAudience(db: Tx, list: { id: number; accountId: number }, audience: AudienceInput): Promise<void> {
  const missing = await unknownFields(db, list.id, Object.keys(audience.fields ?? {}));
  if (missing.length) throw new BadRequest(`no subscriber of the list has the field ${missing.map((f) => `"${f}"`).join(', ')}`);
  const ids = [...new Set(Object.values(audience.engaged ?? {}).filter((v): v is number => typeof v === 'number'))];
  const foreign = await foreignBroadcasts(db, list.accountId, ids);
  if (foreign.length) throw new BadRequest(`no broadcast with id ${foreign.join(', ')} in this account`);
  if (audience.subscribed_after && audience.subscribed_before && audience.subscribed_after >= audience.subscribed_before) {
    throw new BadRequest('subscribed_after must be before subscribed_before');
  }
}

/** What a broadcast keeps of an audience: its tags, and the rest as `segment` (null when there is no rest). */
export function storedSegment(audience: AudienceInput): { tags: string[]; segment: StoredSegment | null } {
  const segment: StoredSegment = {};
  if (audience.fields && Object.keys(audience.fields).length) segment.fields = audience.fields;
  if (audience.engaged) segment.engaged = audience.engaged;
  if (audience.subscribed_after) segment.subscribed_after = iso(audience.subscribed_after)!;
  if (audience.subscribed_before) segment.subscribed_before = iso(audience.subscribed_before)!;
  return { tags: audience.tags ?? [], segment: Object.keys(segment).length ? segment : null };
}

/** The rule of a stored broadcast (its tags and segment). */
export function ruleOf(b: Pick<Broadcast, 'tags' | 'segment'> & Partial<Pick<Broadcast, 'topics'>>): AudienceRule {
  const segment = (b.segment ?? {}) as StoredSegment;
  return {
    tags: b.tags,
    fields: segment.fields,
    engaged: segment.engaged,
    subscribedAfter: segment.subscribed_after ? new Date(segment.subscribed_after) : null,
    subscribedBefore: segment.subscribed_before ? new Date(segment.subscribed_before) : null,
    topics: b.topics ?? [],
  };
}

/** The rule of an audience as given (the dry run's). */
export function ruleOfInput(audience: AudienceInput, topics: string[] = []): AudienceRule {
  const { tags, segment } = storedSegment(audience);
  return ruleOf({ tags, segment: segment as never, topics });
}

/** POST /admin/api/broadcasts/audience: how many of the list the audience takes now (the snapshot's own rule). */
export async function dryRunAudience(db: Tx, listKey: string, audience: AudienceInput, topics: string[] = []): Promise<number> {
  const list = await db.list.findUnique({ where: { key: listKey } });
  if (!list) throw new NotFound(`no list with key "${listKey}"`);
  await checkAudience(db, list, audience);
  requireTopics(list, topics);
  return countAudience(db, list.id, ruleOfInput(audience, topics));
}
