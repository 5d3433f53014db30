/**
 * Sequences with branches (docs/outreach.md): the steps form a graph by their caller-given ids. An email
 * step goes on to its `next`, else to the step after it in the list unless that one begins a branch (a condition's
 * `then` or `else`): a branch ends where its steps end. A condition sends nothing; it waits until it is decided (the
 * answer or click it asks about came, or `within_hours` passed) and goes on along `then` or `else`.
 */
export const CONDITIONS = ['replied', 'not_replied', 'clicked', 'not_clicked', 'auto_replied', 'out_of_office'] as const;
export type ConditionKind = (typeof CONDITIONS)[number];

export interface Condition {
  if: ConditionKind;
  within_hours: number;
  then: string;
  else: string;
}

/** A step as the graph sees it. */
export interface StepNode {
  key: string;
  kind: string;
  condition: unknown;
  next: string | null;
}

/** A prospect's place past the last step of its path: it waits for the no-reply close. */
export const END = '$end';

export const conditionOf = (s: StepNode): Condition | null => (s.kind === 'condition' ? (s.condition as Condition) : null);

/** The keys a condition branches to: those steps begin branches. */
function branchStarts(steps: StepNode[]): Set<string> {
  const starts = new Set<string>();
  for (const s of steps) {
    const c = conditionOf(s);
    if (c) starts.add(c.then).add(c.else);
  }
  return starts;
}

/** The key of the step an email step goes on to, or null where its path ends. */
export function successor(steps: StepNode[], key: string): string | null {
  const at = steps.findIndex((s) => s.key === key);
  const step = steps[at];
  if (!step) return null;
  if (step.next) return step.next;
  const following = steps[at + 1];
  if (!following || branchStarts(steps).has(following.key)) return null;
  return following.key;
}

/** Where each step goes: a condition both ways, an email to its successor. */
function edges(steps: StepNode[], s: StepNode): string[] {
  const c = conditionOf(s);
  if (c) return [c.then, c.else];
  const n = successor(steps, s.key);
  return n === null ? [] : [n];
}

/** Why these steps cannot be a sequence, or null: ids repeated, a branch or `next` to a step that does not exist, a cycle. */
export function graphRefusal(steps: StepNode[]): string | null {
  const keys = new Set<string>();
  for (const s of steps) {
    if (keys.has(s.key)) return `steps: the id "${s.key}" is given to two steps`;
    keys.add(s.key);
  }
  for (const s of steps) {
    const c = conditionOf(s);
    for (const [field, target] of c ? ([['then', c.then], ['else', c.else]] as const) : ([['next', s.next]] as const)) {
      if (target !== null && !keys.has(target)) return `steps: "${s.key}" ${field} names "${target}", which is not a step of the campaign`;
    }
  }
  // depth-first search; a step met again while on the path is a cycle
  const state = new Map<string, 'open' | 'done'>();
  const byKey = new Map(steps.map((s) => [s.key, s]));
  const visit = (key: string, path: string[]): string | null => {
    if (state.get(key) === 'done') return null;
    if (state.get(key) === 'open') return `steps: a cycle: ${[...path.slice(path.indexOf(key)), key].join(' -> ')}`;
    state.set(key, 'open');
    for (const to of edges(steps, byKey.get(key)!)) {
      const found = visit(to, [...path, key]);
      if (found) return found;
    }
    state.set(key, 'done');
    return null;
  };
  for (const s of steps) {
    const found = visit(s.key, []);
    if (found) return found;
  }
  const first = steps[0];
  if (first && first.kind === 'condition') return 'steps: the first step must be an email (a condition asks about one sent before it)';
  return null;
}

/** What happened since a prospect came to a condition, as branches decide on it. */
export interface Facts {
  replied: boolean;
  clicked: boolean;
  auto_replied: boolean;
  out_of_office: boolean;
}

const POSITIVE: Record<ConditionKind, keyof Facts> = {
  replied: 'replied',
  not_replied: 'replied',
  clicked: 'clicked',
  not_clicked: 'clicked',
  auto_replied: 'auto_replied',
  out_of_office: 'out_of_office',
};

/**
 * A condition's answer: the branch to take, or the moment it will be decided. What it asks about happening decides it
 * at once; its not happening, only when `within_hours` since `since` have passed.
 */
export function decide(c: Condition, facts: Facts, since: Date, now: Date): { to: string } | { until: Date } {
  const happened = facts[POSITIVE[c.if]];
  const negative = c.if.startsWith('not_');
  if (happened) return { to: negative ? c.else : c.then };
  const deadline = new Date(since.getTime() + c.within_hours * 3_600_000);
  if (now.getTime() < deadline.getTime()) return { until: deadline };
  return { to: negative ? c.then : c.else };
}

/** The condition kinds an inbound answer of this kind decides at once. */
export function decidedBy(answer: 'reply' | 'auto_reply' | 'out_of_office'): ConditionKind[] {
  if (answer === 'reply') return ['replied', 'not_replied'];
  if (answer === 'out_of_office') return ['auto_replied', 'out_of_office'];
  return ['auto_replied'];
}
