import type { Db, Tx } from '../db';
import type { Verification, Verifier, VerifyMode } from '.';
import type { KeptVerification } from './repository';

/**
 * The verification of the addresses an add or an import brings (lower-cased, once each), and what the caller does
 * with it: which addresses `block_undeliverable` keeps out, which results are kept on the rows written, and the
 * `{result, checked_at}` each row shows.
 */
export class VerifiedBatch {
  readonly checkedAt = new Date();
  private readonly blocked = new Set<string>();

  private constructor(private readonly byEmail: Map<string, Verification>) {}

  static async of(db: Db | Tx, verifier: Verifier, accountId: number, emails: string[]): Promise<VerifiedBatch> {
    const unique = [...new Set(emails)];
    const results = await verifier.verify(db, accountId, unique);
    return new VerifiedBatch(new Map(unique.map((email, i) => [email, results[i]!])));
  }

  get(email: string): Verification | undefined {
    return this.byEmail.get(email);
  }

  /** Whether `mode` keeps the address out (block_undeliverable and undeliverable); a blocked address is kept on no row. */
  blocks(mode: VerifyMode | string | null | undefined, email: string): boolean {
    if (mode !== 'block_undeliverable' || this.byEmail.get(email)?.result !== 'undeliverable') return false;
    this.blocked.add(email);
    return true;
  }

  /** The reasons as one line: `undeliverable: <reasons>`, the words of a blocked line or item. */
  refusal(email: string): string {
    return `undeliverable: ${this.byEmail.get(email)!.reasons.join('; ')}`;
  }

  /** The results to keep on the rows written (the blocked addresses wrote none). */
  kept(): KeptVerification[] {
    return [...this.byEmail].filter(([email]) => !this.blocked.has(email)).map(([email, v]) => ({ email, result: v.result, checkedAt: this.checkedAt }));
  }

  /** What a row of the address shows; null when it was not verified. */
  view(email: string | null): { result: string; checked_at: string } | null {
    const found = email === null ? undefined : this.byEmail.get(email);
    return found ? { result: found.result, checked_at: this.checkedAt.toISOString() } : null;
  }
}
