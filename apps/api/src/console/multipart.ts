import { Readable, pipeline } from 'node:stream';
import busboy from 'busboy';
import { BadRequest } from '../../../core/src/errors';

/**
 * A form field longer than this is refused (the upload form's are its CSRF token and two short choices); busboy marks
 * one that reaches its limit truncated, so its limit is a byte more.
 */
const FIELD_MAX = 256;
/** The upload form has four parts: a body with more is not from it (busboy signals when the limit is reached: one more). */
const PARTS_MAX = 16;
/** Header lines a part may have (a browser sends Content-Disposition and Content-Type). */
const PART_HEADERS_MAX = 8;

export interface Part {
  name: string;
  filename?: string;
}

interface Received extends Part {
  value?: string;
  truncated?: boolean;
  stream?: Readable;
}

type Event = { part: Received } | { error: BadRequest } | { end: true };

/** Whatever stopped the body (busboy's refusal, or the client going away) as the console's answer. */
const refusal = (err: unknown) =>
  err instanceof BadRequest ? err : new BadRequest(`the upload was cut off or is not well-formed multipart/form-data (${(err as Error).message})`);

/**
 * A multipart/form-data body read as a stream by busboy, one part after the other, in the order the browser sent them
 * (the form's order): a small field can be read and checked (the CSRF token, first in the form) before a file part is
 * streamed on without ever being held whole (busboy waits while its file is not read). Used by the console's file
 * upload, which posts a file with no script.
 */
export class MultipartReader {
  private readonly events: Event[] = [];
  private wake: (() => void) | null = null;
  private current: Received | null = null;
  private finished = false;

  /** Refuses a Content-Type that is not multipart/form-data with a boundary. */
  constructor(body: AsyncIterable<Buffer>, contentType: string | undefined) {
    if (!/^multipart\/form-data\s*;/i.test(contentType ?? '')) throw new BadRequest('send the file with the list page form (multipart/form-data)');
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: FIELD_MAX + 1, parts: PARTS_MAX + 1, headerPairs: PART_HEADERS_MAX } });
    } catch (err) {
      throw new BadRequest(`send the file with the list page form (multipart/form-data): ${(err as Error).message}`);
    }
    const push = (event: Event) => {
      this.events.push(event);
      this.wake?.();
      this.wake = null;
    };
    parser.on('field', (name, value, info) => push({ part: { name, value, truncated: info.valueTruncated } }));
    parser.on('file', (name, stream, info) => {
      // a file cut off before anyone reads it must not be an unhandled error: its reader sees the error when it reads
      stream.on('error', () => undefined);
      push({ part: { name, filename: info.filename, stream } });
    });
    parser.on('partsLimit', () => push({ error: new BadRequest(`the upload has more than ${PARTS_MAX} parts`) }));
    const source = body instanceof Readable ? body : Readable.from(body);
    pipeline(source, parser, (err) => push(err ? { error: refusal(err) } : { end: true }));
  }

  private async event(): Promise<Event> {
    while (!this.events.length) await new Promise<void>((resolve) => (this.wake = resolve));
    return this.events.shift()!;
  }

  /** The next part's name (and file name), or null after the last one. Skips what is left of the current part. */
  async next(): Promise<Part | null> {
    this.current?.stream?.resume();
    this.current = null;
    if (this.finished) return null;
    const event = await this.event();
    if ('error' in event) throw event.error;
    if ('end' in event) {
      this.finished = true;
      return null;
    }
    this.current = event.part;
    return { name: event.part.name, filename: event.part.filename };
  }

  /** The current part's bytes, as they arrive. */
  async *body(): AsyncGenerator<Buffer> {
    const part = this.current;
    if (!part) return;
    if (!part.stream) {
      yield Buffer.from(part.value ?? '');
      return;
    }
    try {
      for await (const chunk of part.stream) yield chunk as Buffer;
    } catch (err) {
      throw refusal(err);
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
    if (this.current?.truncated) throw new BadRequest('a form field of the upload is too long');
    return Buffer.concat(chunks).toString('utf8');
  }
}
