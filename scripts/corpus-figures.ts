/**
 * The bounce corpus figures (docs/inbound.md): every file of test/fixtures/sisimai/bsd that has an expected answer
 * (expected.json, from go-sisimai's tables) goes through classify(), and its outcome is compared per recipient with the
 * answer. Used by test/inbound/corpus.test.ts (the figures as assertions) and `npm run corpus` (the figures printed).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { classify } from '../apps/core/src/inbound/classify';
import { reasonClass, REASONS, type Reason } from '../apps/core/src/inbound/bounces';
import { DEAD_KINDS, WORDINGS, wordingReport, type WordingForm } from '../test/fixtures/wordings/cases';

export const CORPUS_DIR = join(__dirname, '..', 'test/fixtures/sisimai');

interface Expected { status: string; code: string; reason: string; hard: boolean; feedback?: string; recipient?: string }

/** sisimai's names that ours fold into another (apps/core/src/inbound/bounces/reasons.ts) */
const FOLD: Record<string, string> = { badreputation: 'blocked', failedstarttls: 'securityerror', notcompliantrfc: 'contenterror', speeding: 'ratelimited', filtered: 'onhold', suppressed: 'onhold' };

export interface Tally {
  files: number;
  /** sisimai's hard bounces, and how many of them we suppress at once */
  dead: number;
  deadSuppressed: number;
  /** 5.x.x failures whose expected reason is not about the address, and how many we suppress at once */
  notAddress: number;
  notAddressSuppressed: number;
  /** every other 5.x.x failure that is not a hard bounce (mailbox failures, sisimai's filtered...): suppressed at once */
  otherSoft: number;
  otherSoftSuppressed: number;
  /**
   * every failure sisimai does not call a hard bounce (4.x.x, not about the address, mailbox failures, its `filtered`
   * and `suspend`): a live address, and how many of them we suppress at once
   */
  live: number;
  liveSuppressed: number;
  /** 4.x.x failures, and how many we suppress */
  temporary: number;
  temporarySuppressed: number;
  /** reports (every file but sisimai's rfc3834 ones) read as auto-replies */
  reports: number;
  reportsAsAutoReply: number;
  /** sisimai's rfc3834 files, and how many we read as auto-replies */
  rfc3834: number;
  rfc3834AutoReply: number;
  /** sisimai's arf files, and how many we read as complaints */
  arf: number;
  arfComplaint: number;
  /** expected recipients, and how many we found */
  recipients: number;
  recipientsFound: number;
  /** rows whose reason we name as sisimai does (after folding) */
  reasonSame: number;
  rows: number;
}

const empty = (): Tally => ({
  files: 0, dead: 0, deadSuppressed: 0, notAddress: 0, notAddressSuppressed: 0, otherSoft: 0, otherSoftSuppressed: 0,
  live: 0, liveSuppressed: 0, temporary: 0, temporarySuppressed: 0, reports: 0, reportsAsAutoReply: 0, rfc3834: 0, rfc3834AutoReply: 0, arf: 0,
  arfComplaint: 0, recipients: 0, recipientsFound: 0, reasonSame: 0, rows: 0,
});

export interface Figures {
  overall: Tally;
  families: Record<string, Tally>;
  /** files whose outcome missed, for the curious: file, what was expected, what we read */
  misses: string[];
}

export async function corpusFigures(now = new Date('2026-11-25T00:00:00Z')): Promise<Figures> {
  const expected = JSON.parse(readFileSync(join(CORPUS_DIR, 'expected.json'), 'utf8')) as Record<string, (Expected | null)[]>;
  const overall = empty();
  const families: Record<string, Tally> = {};
  const misses: string[] = [];
  for (const [file, rows] of Object.entries(expected)) {
    const family = file.replace(/-\d+\.eml$/, '');
    const tallies = [overall, (families[family] ??= empty())];
    const add = (key: keyof Tally, n = 1) => tallies.forEach((t) => (t[key] += n));
    const mail = await classify(readFileSync(join(CORPUS_DIR, 'bsd', file)), now);
    add('files');
    const isVacation = family === 'rfc3834';
    if (isVacation) {
      add('rfc3834');
      if (mail.kind === 'auto_reply') add('rfc3834AutoReply');
      else misses.push(`${file}: an auto-reply read as ${mail.kind}`);
      continue;
    }
    add('reports');
    if (mail.kind === 'auto_reply') add('reportsAsAutoReply'), misses.push(`${file}: a report read as an auto-reply`);
    if (family === 'arf') {
      add('arf');
      if (mail.kind === 'complaint') add('arfComplaint');
      else misses.push(`${file}: a complaint read as ${mail.kind}`);
    }
    const ours = mail.report?.recipients ?? [];
    rows.forEach((row, i) => {
      if (!row) return;
      add('rows');
      const wanted = row.recipient && !row.recipient.endsWith('.invalid') ? row.recipient : null;
      const found = wanted ? ours.find((r) => r.address === wanted) : ours[i];
      if (wanted && !['vacation', 'delivered'].includes(row.reason)) {
        add('recipients');
        const named = mail.kind === 'complaint' ? mail.report?.recipient === wanted || ours.some((r) => r.address === wanted) || complaintNames(mail, wanted) : !!found;
        if (named) add('recipientsFound');
        else misses.push(`${file}: recipient ${wanted} not found (${mail.kind}: ${ours.map((r) => r.address).join(', ') || mail.report?.recipient || 'none'})`);
      }
      if (row.reason === 'feedback' || row.reason === 'delivered' || row.reason === 'vacation') return;
      const reason = (FOLD[row.reason] ?? row.reason) as Reason;
      if (found?.reason === reason) add('reasonSame');
      const suppressed = mail.kind === 'bounce' && !!found?.dead;
      const what = found ? `${found.reason} ${found.status ?? ''}` : 'no recipient';
      if (!row.hard) {
        add('live');
        if (suppressed) add('liveSuppressed');
      }
      if (row.hard) {
        add('dead');
        if (suppressed) add('deadSuppressed');
        else misses.push(`${file}#${i + 1}: dead (${row.reason} ${row.status}) not suppressed: ${what}`);
      } else if (row.status.startsWith('4')) {
        add('temporary');
        if (suppressed) add('temporarySuppressed'), misses.push(`${file}#${i + 1}: 4.x.x (${row.reason}) suppressed: ${what}`);
      } else if (row.status.startsWith('5') && (REASONS as readonly string[]).includes(reason) && reasonClass(reason) === 'not_address') {
        add('notAddress');
        if (suppressed) add('notAddressSuppressed'), misses.push(`${file}#${i + 1}: ${row.reason} ${row.status} suppressed: ${what}`);
      } else if (row.status.startsWith('5')) {
        add('otherSoft');
        if (suppressed) add('otherSoftSuppressed'), misses.push(`${file}#${i + 1}: live (${row.reason} ${row.status}) suppressed: ${what}`);
      }
    });
  }
  return { overall, families, misses };
}

function complaintNames(mail: Awaited<ReturnType<typeof classify>>, wanted: string): boolean {
  return mail.report?.addresses.includes(wanted) ?? false;
}

const pct = (n: number, of: number) => (of ? `${((100 * n) / of).toFixed(1)}%` : '-');

/** The figures as a Markdown table, one row per family and the overall one. */
export function figuresTable(f: Figures): string {
  const head = '| family | files | dead suppressed | not-address 5xx suppressed | 4.x.x suppressed | read as auto-reply | recipient found | reason as sisimai | live suppressed |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|';
  const line = (name: string, t: Tally) =>
    `| ${name} | ${t.files} | ${t.deadSuppressed}/${t.dead} | ${t.notAddressSuppressed}/${t.notAddress} | ${t.temporarySuppressed}/${t.temporary} | ${t.reportsAsAutoReply}/${t.reports} | ${t.recipientsFound}/${t.recipients} | ${t.reasonSame}/${t.rows} | ${t.liveSuppressed}/${t.live} |`;
  const rows = Object.keys(f.families).sort().map((k) => line(k, f.families[k]!));
  const o = f.overall;
  const total = `| **all** | ${o.files} | ${o.deadSuppressed}/${o.dead} (${pct(o.deadSuppressed, o.dead)}) | ${o.notAddressSuppressed}/${o.notAddress} (${pct(o.notAddressSuppressed, o.notAddress)}) | ${o.temporarySuppressed}/${o.temporary} | ${o.reportsAsAutoReply}/${o.reports} | ${o.recipientsFound}/${o.recipients} (${pct(o.recipientsFound, o.recipients)}) | ${o.reasonSame}/${o.rows} (${pct(o.reasonSame, o.rows)}) | ${o.liveSuppressed}/${o.live} (${pct(o.liveSuppressed, o.live)}) |`;
  return [head, ...rows, total].join('\n');
}

export { pct };

/** Our own corpus (test/fixtures/wordings): every wording as a DSN and, when it has words, as a plain-text report. */
export interface WordingFigures {
  dead: number;
  deadSuppressed: number;
  live: number;
  liveSuppressed: number;
  autoReplies: number;
  misses: string[];
}

export async function wordingFigures(now = new Date('2026-11-25T00:00:00Z')): Promise<WordingFigures> {
  const out: WordingFigures = { dead: 0, deadSuppressed: 0, live: 0, liveSuppressed: 0, autoReplies: 0, misses: [] };
  for (const c of WORDINGS) {
    for (const form of ['dsn', 'text'] as WordingForm[]) {
      if (form === 'text' && !c.text) continue;
      const mail = await classify(Buffer.from(wordingReport(c, form, 'someone@remote.test', 'sales@ours.test', '<m1@ours.test>'), 'utf8'), now);
      const failed = mail.report?.recipients.find((r) => r.address === 'someone@remote.test');
      const suppressed = mail.kind === 'bounce' && !!failed?.dead;
      if (mail.kind === 'auto_reply') out.autoReplies++;
      const what = `${c.kind} ${c.lang} ${form} "${c.text}": ${mail.kind} ${failed ? `${failed.reason} ${failed.status ?? ''}` : 'no recipient'}`;
      if (DEAD_KINDS.includes(c.kind)) {
        out.dead++;
        if (suppressed) out.deadSuppressed++;
        else out.misses.push(`dead not suppressed: ${what}`);
      } else {
        out.live++;
        if (suppressed) out.liveSuppressed++, out.misses.push(`live suppressed: ${what}`);
      }
    }
  }
  return out;
}
