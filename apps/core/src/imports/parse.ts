import { BadRequest } from '../errors';
import { fields as fieldsSchema, NAME_MAX, TAG_LENGTH_MAX, TAGS_MAX, type FieldValue } from '../subscribers/schema';
import { email as emailSchema } from '../validate';
import { csvRecord } from './csv';

export type ImportFormat = 'csv' | 'ndjson';
/** The columns a CSV header may name (in any order; `email` is required), and the keys of an NDJSON object. */
export const IMPORT_COLUMNS = ['email', 'name', 'tags', 'fields', 'status', 'consent_source', 'consent_at'] as const;
/** Columns the export writes that an import reads past (the service sets them): an export imports as it is. */
export const EXPORT_ONLY_COLUMNS = ['created_at', 'confirmed_at'] as const;
const ACCEPTED_COLUMNS: readonly string[] = [...IMPORT_COLUMNS, ...EXPORT_ONLY_COLUMNS];
/** The statuses an import may give as its default: `pending` is added as the API's add would (the confirmation email on a double opt-in list, active on a list without confirmation). */
export const IMPORT_STATUSES = ['active', 'pending', 'unsubscribed'] as const;
export type ImportStatusValue = (typeof IMPORT_STATUSES)[number];
/** A line may also say `bounced` or `complained` (an export's): recorded so, never written to, as a suppressed address. */
export const LINE_STATUSES = [...IMPORT_STATUSES, 'bounced', 'complained'] as const;
export type LineStatus = (typeof LINE_STATUSES)[number];
/** A longer line (a CSV record: its lines) is refused (nothing we store about a subscriber comes near it). */
export const LINE_MAX = 8_192;
export const CONSENT_SOURCE_MAX = 100;

export interface ImportRow {
  line: number;
  email: string;
  name: string;
  tags: string[];
  fields: Record<string, FieldValue>;
  /** null: the list decides (active without confirmation, pending with) */
  status: LineStatus | null;
  consentSource: string;
  consentAt: Date | null;
}

export type Parsed = ImportRow | { line: number; reason: string };

/** The CSV header's columns; a missing `email` column, an unknown or a repeated one is a 400 (nothing is stored). */
export function parseHeader(line: string): string[] {
  const read = csvRecord(line.replace(/^\uFEFF/, ''));
  if (!Array.isArray(read)) throw new BadRequest(`csv header: ${read.reason}`);
  const columns = read.map((c) => c.toLowerCase());
  const unknown = columns.filter((c) => !ACCEPTED_COLUMNS.includes(c));
  if (unknown.length) throw new BadRequest(`csv header: unknown column ${JSON.stringify(unknown[0])} (columns: ${IMPORT_COLUMNS.join(', ')})`);
  if (!columns.includes('email')) throw new BadRequest(`csv header: an "email" column is required (columns: ${IMPORT_COLUMNS.join(', ')})`);
  if (new Set(columns).size !== columns.length) throw new BadRequest('csv header: a column is named twice');
  return columns;
}

const emailOnly = emailSchema().required();

/** One stored line as a row to apply, or the reason it is refused. */
export function parseLine(format: ImportFormat, columns: string[], line: number, text: string, defaultStatus: string | null = null): Parsed {
  if (text.length > LINE_MAX) return { line, reason: `the line is longer than ${LINE_MAX} characters` };
  // the API stores a NUL byte or bytes that are not UTF-8 as U+FFFD (store.ts): such a line is refused whole
  if (text.includes('\uFFFD')) return { line, reason: 'not UTF-8 text, or holds a NUL byte' };
  let record: Record<string, unknown>;
  if (format === 'csv') {
    const fields = csvRecord(text);
    if (!Array.isArray(fields)) return { line, reason: fields.reason };
    if (fields.length > columns.length) return { line, reason: `${fields.length} fields, the header names ${columns.length}` };
    // the export's guard against spreadsheet formulas (control/csv.ts) is taken off again
    record = Object.fromEntries(columns.map((c, i) => [c, (fields[i] ?? '').replace(/^'(?=[=+\-@\t\r])/, '')]));
    if (typeof record.tags === 'string') record.tags = record.tags.split(';');
    if (typeof record.fields === 'string') {
      try {
        record.fields = record.fields === '' ? {} : JSON.parse(record.fields);
      } catch {
        return { line, reason: 'fields must be a JSON object' };
      }
    }
  } else {
    try {
      record = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return { line, reason: 'not JSON' };
    }
    if (record === null || typeof record !== 'object' || Array.isArray(record)) return { line, reason: 'not a JSON object' };
    const unknown = Object.keys(record).find((k) => !ACCEPTED_COLUMNS.includes(k));
    if (unknown !== undefined) return { line, reason: `unknown key ${JSON.stringify(unknown)}` };
  }
  const parsed = checkRecord(line, record);
  if (!('reason' in parsed) && parsed.status === null) parsed.status = defaultStatus as LineStatus | null;
  return parsed;
}

function checkRecord(line: number, record: Record<string, unknown>): Parsed {
  const refuse = (reason: string) => ({ line, reason });
  const { error, value: email } = emailOnly.validate(record.email);
  if (error) return refuse(typeof record.email === 'string' && record.email.trim() ? `not an email address: ${JSON.stringify(record.email.slice(0, 100))}` : 'no email address');
  const text = (key: string, max: number): string | { reason: string } => {
    const value = record[key] ?? '';
    if (typeof value !== 'string') return { reason: `${key} must be text` };
    const trimmed = value.trim();
    return [...trimmed].length > max ? { reason: `${key} is longer than ${max} characters` } : trimmed;
  };
  const name = text('name', NAME_MAX);
  if (typeof name !== 'string') return refuse(name.reason);
  const consentSource = text('consent_source', CONSENT_SOURCE_MAX);
  if (typeof consentSource !== 'string') return refuse(consentSource.reason);
  const rawTags = record.tags ?? [];
  if (!Array.isArray(rawTags) || rawTags.some((t) => typeof t !== 'string')) return refuse('tags must be a list of text');
  const tags = [...new Set((rawTags as string[]).map((t) => t.trim()).filter(Boolean))];
  if (tags.length > TAGS_MAX) return refuse(`more than ${TAGS_MAX} tags`);
  if (tags.some((t) => t.length > TAG_LENGTH_MAX)) return refuse(`a tag is longer than ${TAG_LENGTH_MAX} characters`);
  const fieldsGiven = record.fields ?? {};
  const { error: fieldsError, value: fields } = fieldsSchema().label('fields').validate(fieldsGiven, { errors: { wrap: { label: false } } });
  if (fieldsError) return refuse(typeof fieldsGiven === 'object' && !Array.isArray(fieldsGiven) ? fieldsError.message : 'fields must be a JSON object');
  const status = record.status === undefined || record.status === null || record.status === '' ? null : record.status;
  if (status !== null && !(LINE_STATUSES as readonly unknown[]).includes(status)) return refuse(`status must be one of ${LINE_STATUSES.join(', ')}`);
  let consentAt: Date | null = null;
  if (record.consent_at !== undefined && record.consent_at !== null && record.consent_at !== '') {
    consentAt = typeof record.consent_at === 'string' && /^\d{4}-\d\d-\d\d/.test(record.consent_at) ? new Date(record.consent_at) : new Date(NaN);
    if (Number.isNaN(consentAt.getTime())) return refuse('consent_at must be an ISO 8601 date or time');
    if (consentAt.getTime() > Date.now() + 86_400_000) return refuse('consent_at is in the future');
  }
  return { line, email: email as string, name, tags, fields: fields as Record<string, FieldValue>, status: status as LineStatus | null, consentSource: consentSource || 'import', consentAt };
}
