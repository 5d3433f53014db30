import { BadRequest } from '../../../core/src/errors';

/** Part headers longer than this are refused (a browser sends a couple of short lines). */
const HEADERS_MAX = 8 * 1024;

export interface Part {
  name: string;
  filename?: string;
}

/**
 * A multipart/form-data body read as a stream, one part after the other, in the order the browser sent them (the
 * form's order): a small field can be read and checked (the CSRF token, first in the form) before a file part is
 * streamed on without ever being held whole. Used by the console's file upload, which posts a file with no script.
 */
export class MultipartReader {
  private buf: Buffer;
  private readonly delimiter: Buffer;
  private readonly chunks: AsyncIterator<Buffer>;
  private inPart = false;
  private started = false;
  private finished = false;

  constructor(body: AsyncIterable<Buffer>, boundary: string) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
    // the body starts with `--boundary`: as if a line break came before it, so every delimiter reads alike
    this.buf = Buffer.from('\r\n');
    this.chunks = body[Symbol.asyncIterator]();
  }

  /** The boundary of a multipart/form-data Content-Type, or null when it is not one. */
  static boundaryOf(contentType: string | undefined): string | null {
    if (!/^multipart\/form-data\s*;/i.test(contentType ?? '')) return null;
    const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType!);
    return match ? (match[1] ?? match[2]!) : null;
  }

  private async fill(): Promise<void> {
    const next = await this.chunks.next();
    if (next.done) throw new BadRequest('the upload was cut off');
    this.buf = Buffer.concat([this.buf, next.value]);
  }

  /** The next part's name (and file name), or null after the last one. Skips what is left of the current part. */
  async next(): Promise<Part | null> {
    if (this.finished) return null;
    if (!this.started) {
      let at: number;
      while ((at = this.buf.indexOf(this.delimiter)) < 0) {
        if (this.buf.length > HEADERS_MAX) throw new BadRequest('the upload does not start with its boundary');
        await this.fill();
      }
      this.buf = this.buf.subarray(at + this.delimiter.length);
      this.started = true;
    } else if (this.inPart) for await (const _ of this.body()) void _;
    // right after a delimiter: `--` ends the body, a line break and headers start a part
    while (this.buf.length < 2) await this.fill();
    if (this.buf.subarray(0, 2).toString() === '--') {
      this.finished = true;
      return null;
    }
    let end: number;
    while ((end = this.buf.indexOf('\r\n\r\n')) < 0) {
      if (this.buf.length > HEADERS_MAX) throw new BadRequest('the upload has a part with too long headers');
      await this.fill();
    }
    const headers = this.buf.subarray(2, end).toString('utf8');
    this.buf = this.buf.subarray(end + 4);
    const disposition = /^content-disposition:\s*form-data(.*)$/im.exec(headers)?.[1] ?? '';
    const name = /;\s*name="([^"]*)"/i.exec(disposition)?.[1];
    if (name === undefined) throw new BadRequest('the upload has a part without a name');
    const filename = /;\s*filename="([^"]*)"/i.exec(disposition)?.[1];
    this.inPart = true;
    return { name, filename };
  }

  /** The current part's bytes, as they arrive, up to the next delimiter. */
  async *body(): AsyncGenerator<Buffer> {
    if (!this.inPart) return;
    for (;;) {
      const at = this.buf.indexOf(this.delimiter);
      if (at >= 0) {
        if (at > 0) yield this.buf.subarray(0, at);
        this.buf = this.buf.subarray(at + this.delimiter.length);
        this.inPart = false;
        return;
      }
      // keep what could be the start of a delimiter split across chunks
      const safe = this.buf.length - (this.delimiter.length - 1);
      if (safe > 0) {
        yield this.buf.subarray(0, safe);
        this.buf = this.buf.subarray(safe);
      }
      await this.fill();
    }
  }

  /** The current part as text, at most `max` bytes (a form field). */
  async text(max: number): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of this.body()) {
      size += chunk.length;
      if (size > max) throw new BadRequest('a form field of the upload is too long');
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}
