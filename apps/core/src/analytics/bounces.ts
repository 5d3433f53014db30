/**
 * Which counter a bounce goes to (docs/analytics.md): `dead` when the bounce reader says the address will never take
 * mail (its reason is userunknown, hostunknown, hasmoved or notaccept: docs/inbound.md), `other` for the rest. Without
 * the reader's verdict, a permanent 5xx / 5.x.x answer counts as dead. The one place the distinction is made.
 */
export type BounceClass = 'dead' | 'other';

export function bounceClass(answer: { dead?: boolean | null; status?: string | null; smtp?: string | null }): BounceClass {
  // the bounce reader's verdict (inbound/bounce-policy.ts: a dead address by its reason) when there is one
  if (typeof answer.dead === 'boolean') return answer.dead ? 'dead' : 'other';
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
