/** `npm run admin -- import FILE --list LIST`: an import of subscribers with a progress bar (docs/lists.md, "Import"). */
import fs from 'node:fs';
import { importQuery } from '../apps/core/src/imports/schema';
import type { Db } from '../apps/core/src/db';
import { importChange } from '../apps/core/src/changes';
import { cliChange } from './admin-audit';
import { AppError } from '../apps/core/src/errors';
import { getImport, IMPORT_STATUSES, receiveImport, type ImportFormat, type ImportStatusValue, type ImportView } from '../apps/core/src/imports';
import { closeQueues } from '../apps/core/src/queues';
import { listRef } from '../apps/core/src/subscribers/lists';
import { idParam, Joi, validate } from '../apps/core/src/validate';
import type { VerifyMode } from '../apps/core/src/verify';

export const IMPORT_HELP = `  import FILE --list LIST [--format csv|ndjson] [--status active|pending|unsubscribed] [--verify flag|block_undeliverable]
                                   (subscribers from a file: CSV with a header line, or NDJSON;
                                   the format from the file's extension unless given; --status for lines naming none;
                                   --verify checks each address (docs/verification.md);
                                   a running worker applies it,
                                   a progress bar on stderr, the report as JSON at the end)
  import show ID                   (an import's counts and per-line errors)`;

export const importOptions = {
  list: { type: 'string' },
  format: { type: 'string' },
  verify: { type: 'string' },
} as const;

/** Wait between looks at the import's row while it runs. */
const POLL_MS = 250;
/** Without progress for this long, say that the import needs a worker. */
const HINT_AFTER_MS = 15_000;

function formatOf(file: string, given: unknown): ImportFormat {
  const format = typeof given === 'string' ? given : /\.(nd)?jsonl?$/i.test(file) || /\.ndjson$/i.test(file) ? 'ndjson' : 'csv';
  if (format !== 'csv' && format !== 'ndjson') throw new AppError('--format must be csv or ndjson');
  return format;
}

function bar(view: ImportView): string {
  const share = view.total ? view.processed / view.total : 0;
  const filled = Math.round(share * 30);
  return `[${'#'.repeat(filled)}${'.'.repeat(30 - filled)}] ${String(Math.floor(share * 100)).padStart(3)}% ${view.processed}/${view.total} lines` +
    `  added ${view.added}, updated ${view.updated}, skipped ${view.skipped}, refused ${view.refused}`;
}

export async function importCommand(d: Db, action: string | undefined, arg: string | undefined, flags: Record<string, unknown>): Promise<unknown> {
  if (action === 'show') return { import: await getImport(d, validate(idParam, arg)) };
  if (!action) throw new AppError('import: name the file (npm run admin -- import FILE --list LIST)');
  const listId = (await listRef(d, flags.list)).id;
  const format = formatOf(action, flags.format);
  if (!fs.existsSync(action)) throw new AppError(`import: no file ${action}`);
  try {
    const { status } = validate<{ status?: ImportStatusValue }>(Joi.object({ status: Joi.string().valid(...IMPORT_STATUSES) }), { status: flags.status });
    const { verify } = validate<{ verify?: VerifyMode }>(importQuery, { verify: flags.verify });
    const commit = (work: (db: Db) => Promise<ImportView>) => cliChange(d, importChange(listId, format), work);
    const started = await receiveImport(d, listId, format, fs.createReadStream(action), { defaultStatus: status, verify, commit });
    process.stderr.write(`import ${started.id}: ${started.total} lines stored, applying\n`);
    let view = started;
    let moved = Date.now();
    let hinted = false;
    while (view.status === 'queued' || view.status === 'running') {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      const next = await getImport(d, started.id);
      if (next.processed !== view.processed) moved = Date.now();
      view = next;
      process.stderr.write(`\r${bar(view)}`);
      if (!hinted && Date.now() - moved > HINT_AFTER_MS) {
        hinted = true;
        process.stderr.write(`\nimport ${started.id}: no progress yet; is a worker running (npm start, or npm run worker)? Waiting; Ctrl-C leaves the import to the worker.\n`);
      }
    }
    process.stderr.write('\n');
    if (view.status === 'failed') process.exitCode = 1;
    return { import: view };
  } finally {
    await closeQueues();
  }
}
