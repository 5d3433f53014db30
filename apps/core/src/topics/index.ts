import type { List, Subscriber } from '../../../../generated/prisma/client';
import { BadRequest } from '../errors';
import { Joi } from '../validate';

/**
 * A list's topics (docs/preferences.md): what a subscriber may choose to receive, each in or out by default, public
 * ones offered on the hosted form. A subscriber keeps only the choices they made (`subscribers.topics`, {id: in?});
 * every other topic is its default, so a topic added later reaches who its default says.
 */
export interface Topic {
  id: string;
  name: string;
  description: string;
  default: 'in' | 'out';
  public: boolean;
}

/** A topic id: caller-chosen, safe in a URL path and a comma-separated list. */
export const TOPIC_ID = /^[a-z0-9][a-z0-9_-]{0,39}$/;
export const TOPICS_MAX = 50;

export const topicsSchema = Joi.array()
  .items(
    Joi.object({
      id: Joi.string().pattern(TOPIC_ID).required().messages({ 'string.pattern.base': '{{#label}} must be 1 to 40 lowercase letters, digits, - or _' }),
      name: Joi.string().trim().min(1).max(100).required(),
      description: Joi.string().trim().allow('').max(500).default(''),
      default: Joi.string().valid('in', 'out').default('in'),
      public: Joi.boolean().default(true),
    }),
  )
  .max(TOPICS_MAX)
  .unique('id')
  .messages({ 'array.unique': 'two topics have the same id' });

/** The topics of a list as stored. */
export function topicsOf(list: Pick<List, 'topics'>): Topic[] {
  return Array.isArray(list.topics) ? (list.topics as unknown as Topic[]) : [];
}

/** The subscriber's own choices ({topic id: in?}). */
export function choicesOf(subscriber: Pick<Subscriber, 'topics'>): Record<string, boolean> {
  const value = subscriber.topics;
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, boolean>) : {};
}

/** Is the subscriber in the topic: their choice, else the topic's default (the SQL form is broadcasts/repository.ts's). */
export function isIn(topic: Topic, choices: Record<string, boolean>): boolean {
  return typeof choices[topic.id] === 'boolean' ? choices[topic.id]! : topic.default === 'in';
}

/** Refuses (400) topic ids the list does not have: a broadcast or a choice naming another list's topic changes nothing. */
export function requireTopics(list: Pick<List, 'topics'>, ids: string[]): Topic[] {
  const topics = topicsOf(list);
  const missing = ids.filter((id) => !topics.some((t) => t.id === id));
  if (missing.length) throw new BadRequest(`the list has no topic ${missing.map((m) => `"${m}"`).join(', ')}`);
  return ids.map((id) => topics.find((t) => t.id === id)!);
}
