import { CsvError, parse, type Options } from 'csv-parse/sync';

/**
 * An import's CSV, read by csv-parse (RFC 4180): commas, double quotes around a field, "" for a quote inside one, and a
 * quoted field may hold line breaks, so one record can take several lines. Spaces around a field (and around its
 * quotes) are dropped; a quote inside an unquoted field is kept as written. Records end at "\n" only (the store took
 * each line's "\r" off): a lone "\r" is text, as in the export's formula guard.
 */
const OPTIONS: Options = { record_delimiter: '\n', relax_column_count: true, relax_quotes: true, trim: true, skip_empty_lines: true };

function read(text: string): string[][] | CsvError {
  try {
    return parse(text, OPTIONS) as string[][];
  } catch (err) {
    if (err instanceof CsvError) return err;
    throw err;
  }
}

/** What csv-parse found wrong, in the words of someone fixing the file (the report gives the line). */
function reasonOf(err: CsvError): string {
  switch (err.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return 'unterminated quote: a field opens with " on this line and its closing " is missing';
    // (with `trim`, csv-parse's name for any character after a closing quote but a space, a comma or a line break)
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return 'text after the closing " of a quoted field (write "" for a quote inside a quoted field)';
    default:
      return `not CSV: ${err.message}`;
  }
}

/**
 * One record's fields, or what is wrong with it. `text` is one record as csvRecords stored it. A record without a quote
 * is its commas' fields as csv-parse reads them (test/lists/import-parse.test.ts compares the two): split here, as
 * csv-parse's call costs 100 times a split and most lines of an import have no quote.
 */
export function csvRecord(text: string): string[] | { reason: string } {
  if (!text.includes('"')) return text.split(',').map((f) => f.trim());
  const records = read(text);
  if (records instanceof CsvError) return { reason: reasonOf(records) };
  return (records[0] ?? ['']).map((f) => f.trim());
}

export interface Line {
  line: number;
  text: string;
}

/**
 * The body's records from its lines (blank lines included, numbered from 1), each with the line it starts on and its
 * text as written (its lines joined by "\n"). Only a quoted field holds a line break, so a line without a quote is a
 * record of its own; a line with one is given to csv-parse, and while csv-parse says its quote is not closed the next
 * line joins it. A record csv-parse refuses, or a quote still open at the end of the body or over `max` characters, is
 * kept as its first line alone (the worker says what is wrong with it: an unterminated quote, text after a closing
 * one) and reading goes on from the line after it: one bad quote costs one line, not the rest of the file.
 */
export async function* csvRecords(lines: AsyncIterable<Line>, max: number): AsyncGenerator<Line> {
  let open: Line[] = [];
  let size = 0;
  const lineIn = function* (next: Line): Generator<Line> {
    if (!open.length) {
      if (!next.text.trim()) return;
      if (!next.text.includes('"')) return yield next;
    }
    open.push(next);
    size += next.text.length + 1;
    const text = open.map((l) => l.text).join('\n');
    const records = read(text);
    const unclosed = records instanceof CsvError && records.code === 'CSV_QUOTE_NOT_CLOSED';
    if (unclosed ? size > max : records instanceof CsvError) yield* giveUp();
    else if (!unclosed) {
      // a record (its lines joined)
      yield { line: open[0]!.line, text };
      open = [];
      size = 0;
    }
  };
  // the first line alone, then the lines after it read again
  const giveUp = function* (): Generator<Line> {
    const [first, ...rest] = open;
    open = [];
    size = 0;
    yield first!;
    for (const line of rest) yield* lineIn(line);
  };
  for await (const line of lines) yield* lineIn(line);
  while (open.length) yield* giveUp();
}
