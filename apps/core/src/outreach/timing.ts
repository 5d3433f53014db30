/** When steps go out. `delay_hours` counts from the previous step (from the start for step 1) and may be fractional. */

const HOUR_MS = 3_600_000;

export const afterHours = (from: Date, hours: number): Date => new Date(from.getTime() + Math.round(hours * HOUR_MS));

export const firstStepAt = afterHours;

/**
 * How long a prospect may answer after the last step before it is closed as lost/no_reply: the last step's own delay
 * (the rhythm of the sequence goes on one more beat), or three days when that delay is 0 (e.g. a one-email campaign).
 */
export const NO_REPLY_FALLBACK_HOURS = 72;

export function noReplyWaitHours(lastStepDelayHours: number): number {
  return lastStepDelayHours > 0 ? lastStepDelayHours : NO_REPLY_FALLBACK_HOURS;
}
