import fs from 'node:fs';
import type { Express, NextFunction, Request, Response } from 'express';

/**
 * Every answer of the public API that a test file receives, recorded server-side (so calls through `as()`, plain
 * supertest and the browser all count), then checked against /api/v1/openapi.json when the file ends (per-file.ts).
 */
export interface RecordedAnswer {
  method: string;
  path: string;
  status: number;
  contentType: string;
  body: string;
}

export const recordedAnswers: RecordedAnswer[] = [];

const PUBLIC = '/api/v1/';

/** The app, answering as before, with the public API's answers noted on the way out. */
export function recording(app: Express): Express {
  const wrapped = function (req: Request, res: Response, next?: NextFunction) {
    const url = req.url ?? '';
    if (url.startsWith(PUBLIC) && !url.startsWith(`${PUBLIC}openapi.json`)) {
      const chunks: Buffer[] = [];
      const write = res.write.bind(res) as (...args: unknown[]) => boolean;
      const end = res.end.bind(res) as (...args: unknown[]) => Response;
      const keep = (chunk: unknown) => {
        if (typeof chunk === 'string' || chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk as string));
      };
      res.write = ((chunk: unknown, ...rest: unknown[]) => (keep(chunk), write(chunk, ...rest))) as Response['write'];
      res.end = ((chunk?: unknown, ...rest: unknown[]) => {
        keep(chunk);
        recordedAnswers.push({
          method: req.method,
          path: url.split('?')[0]!,
          status: res.statusCode,
          contentType: String(res.getHeader('content-type') ?? ''),
          body: Buffer.concat(chunks).toString('utf8'),
        });
        return end(chunk, ...rest);
      }) as Response['end'];
    }
    return (app as unknown as (req: Request, res: Response, next?: NextFunction) => void)(req, res, next);
  };
  Object.setPrototypeOf(wrapped, app);
  return wrapped as unknown as Express;
}

/** Checks the recorded answers against the document; throws naming every answer that does not fit. */
export async function checkRecordedAnswers(): Promise<void> {
  if (!recordedAnswers.length) return;
  const { answerProblems } = await import('./openapi-check');
  const problems = answerProblems(recordedAnswers);
  if (process.env.OPENAPI_COVERAGE_FILE) {
    fs.appendFileSync(process.env.OPENAPI_COVERAGE_FILE, recordedAnswers.map((a) => `${a.method} ${a.path} ${a.status}\n`).join(''));
  }
  recordedAnswers.length = 0;
  if (problems.length) throw new Error(`answers of the public API that /api/v1/openapi.json does not describe:\n${problems.join('\n')}`);
}
