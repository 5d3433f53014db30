/**
 * Which counter a bounce goes to (docs/analytics.md): `dead` when the address will never take mail (a permanent,
 * 5xx / 5.x.x answer), `other` for the rest (a soft 4.x.x report, or an answer without a code). The one place the
 * distinction is made, so a finer reading of the reason (the bounce's reason code) replaces this function alone.
 */
export type BounceClass = 'dead' | 'other';

export function bounceClass(answer: { status?: string | null; smtp?: string | null }): BounceClass {
  const status = (answer.status ?? '').trim();
  if (/^5\.\d{1,3}\.\d{1,3}/.test(status)) return 'dead';
  if (/^4\.\d{1,3}\.\d{1,3}/.test(status)) return 'other';
  const smtp = (answer.smtp ?? '').trim();
  if (/^5\d\d\b/.test(smtp)) return 'dead';
  return 'other';
}

/** The counter column of a bounce class. */
export const bounceColumn = (cls: BounceClass) => (cls === 'dead' ? 'bounced_dead' : 'bounced_other') as CounterColumn;

export type CounterColumn =
  | 'sent'
  | 'delivered'
  | 'bounced_dead'
  | 'bounced_other'
  | 'complained'
  | 'unsubscribed'
  | 'replied'
  | 'clicked'
  | 'opened';
