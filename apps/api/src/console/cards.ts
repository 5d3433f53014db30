/**
 * Tables as cards on a phone (views.ts's CSS, at most 760 px wide): each row reads as a card of "label: value" lines.
 * Every table with a head gets `data-cards`, and each of its body's cells the heading of its column as `data-label`
 * (a row's own heading cell and a `colspan` are counted), which the CSS shows before the cell's value. Done once here,
 * on the page a template rendered, so no page template repeats its headings. Tables without a head (a record's facts,
 * a heading per row) are narrow already and stay as they are. The console's tables are never nested.
 */
export function labelCells(html: string): string {
  return html.replace(/<table\b([^>]*)>([\s\S]*?)<\/table>/g, (table, attrs: string, inner: string) => {
    const head = /<thead\b[^>]*>([\s\S]*?)<\/thead>/.exec(inner);
    if (!head) return table;
    const labels: string[] = [];
    for (const cell of head[1]!.matchAll(/<th\b([^>]*)>([\s\S]*?)<\/th>/g)) {
      for (let n = 0; n < spanOf(cell[1]!); n++) labels.push(n ? '' : textOf(cell[2]!));
    }
    const after = head.index + head[0].length;
    const body = inner.slice(after).replace(/<tr\b[^>]*>[\s\S]*?<\/tr>/g, (row) => {
      let column = 0;
      return row.replace(/<(t[hd])\b([^>]*)>/g, (open, tag: string, cellAttrs: string) => {
        const label = labels[column] ?? '';
        column += spanOf(cellAttrs);
        return tag === 'td' && !/\bdata-label=/.test(cellAttrs) ? `<td data-label="${label}"${cellAttrs}>` : open;
      });
    });
    return `<table data-cards${attrs}>${inner.slice(0, after)}${body}</table>`;
  });
}

const spanOf = (attrs: string): number => Math.max(1, Number(/\bcolspan="(\d+)"/.exec(attrs)?.[1] ?? 1));

/** A heading's words as an attribute's value: its markup dropped (its text is escaped already), quotes escaped. */
const textOf = (cell: string): string =>
  cell
    .replace(/<[^>]*>/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/"/g, '&quot;');
