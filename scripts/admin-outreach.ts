/**
 * The CLI's flags for outreach that stays out of the spam folder (docs/outreach.md): a campaign's sending window,
 * auto-pause and opt-out, a mailbox's gap jitter and warm-up. Kept apart from admin.ts; the values go through the admin
 * API's schemas like every other flag.
 */
export const OUTREACH_HELP = `  campaign create|set ... [--timezone ZONE --days 1,2,3,4,5 --from HH:MM --to HH:MM | --no-schedule]
           [--bounce-rate R] [--complaint-rate R] [--pause-window N] [--no-pause] [--unsubscribe | --no-unsubscribe]
  campaign stats ID                 (prospects by status, per step, rates, the last 30 days)
  mailbox create|set ... [--gap-jitter R] [--warmup-start N --warmup-step N | --no-warmup]`;

export const outreachOptions = {
  timezone: { type: 'string' },
  days: { type: 'string' },
  from: { type: 'string' },
  'no-schedule': { type: 'boolean' },
  'bounce-rate': { type: 'string' },
  'complaint-rate': { type: 'string' },
  'pause-window': { type: 'string' },
  'no-pause': { type: 'boolean' },
  unsubscribe: { type: 'boolean' },
  'no-unsubscribe': { type: 'boolean' },
  'gap-jitter': { type: 'string' },
  'warmup-start': { type: 'string' },
  'warmup-step': { type: 'string' },
  'no-warmup': { type: 'boolean' },
} as const;

type Flags = Partial<Record<string, string | boolean>>;

const list = (value: unknown) => (typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter(Boolean) : undefined);

/** A campaign's outreach fields from the flags (absent flags leave a field as it is). `to` is shared with `messages --to`. */
export function campaignOutreach(flags: Flags) {
  const schedule = flags['no-schedule']
    ? null
    : flags.timezone !== undefined || flags.days !== undefined || flags.from !== undefined
      ? { timezone: flags.timezone, days: list(flags.days), from: flags.from, to: flags.to }
      : undefined;
  const rates = { bounce_rate: flags['bounce-rate'], complaint_rate: flags['complaint-rate'], window: flags['pause-window'] };
  const pauseOn = flags['no-pause'] ? null : Object.values(rates).some((v) => v !== undefined) ? Object.fromEntries(Object.entries(rates).filter(([, v]) => v !== undefined)) : undefined;
  const unsubscribe = flags.unsubscribe ? true : flags['no-unsubscribe'] ? false : undefined;
  return { schedule, pause_on: pauseOn, unsubscribe };
}

/** A mailbox's pacing fields from the flags. */
export function mailboxOutreach(flags: Flags) {
  const warmup = flags['no-warmup']
    ? null
    : flags['warmup-start'] !== undefined || flags['warmup-step'] !== undefined
      ? { start: flags['warmup-start'], step: flags['warmup-step'] }
      : undefined;
  return { gap_jitter: flags['gap-jitter'], warmup };
}
