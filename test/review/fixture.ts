import { request } from 'node:http';
import path from 'node:path';
import sharp from 'sharp';
import { makeJob, type TestJob } from '../helpers/job.js';
import { simulate } from '../helpers/simulate.js';

/**
 * A name someone else wrote: a terminal escape, markup that would run as a script or an
 * image's onerror if it were put in the page as HTML, and a right-to-left override.
 */
export const HOSTILE = 'evil \x1b[31m<script>window.__pwned=1<\\script> <img src=x onerror="window.__pwned=2"> \u202egpj.jpg';

/** A finished night: `photos` photos (and the hostile one) done through one enhance step, in a ledger on disk. */
export async function doneJob(photos: number, opts: { hostile?: boolean } = {}): Promise<TestJob> {
  const job = await makeJob({ photos, steps: [{ capability: 'enhance' }] });
  // Larger than the page's frames: zoomed to 100 %, it scrolls.
  if (opts.hostile)
    await sharp({ create: { width: 2400, height: 1600, channels: 3, background: { r: 90, g: 120, b: 160 } } })
      .jpeg()
      .toFile(path.join(job.inputDir, HOSTILE));
  const s = await simulate({ job, ledger: job.ledgerFile });
  s.ledger.close();
  return job;
}

export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One HTTP request exactly as given (the path unnormalised, any Host), to 127.0.0.1:port. */
export function raw(
  port: number,
  opts: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: opts.method ?? 'GET', path: opts.path, headers: opts.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** The review server's own headers for a request with its cookie, and a decision as the page posts it. */
export function asPage(port: number, token: string): { cookie: Record<string, string>; post: Record<string, string> } {
  const cookie = { Host: `127.0.0.1:${port}`, Cookie: `darkroom-review-${port}=${token}` };
  return { cookie, post: { ...cookie, Origin: `http://127.0.0.1:${port}`, 'Content-Type': 'application/json' } };
}
