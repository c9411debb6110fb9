import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { runCli } from '../helpers/cli.js';
import { makeJob, type TestJob } from '../helpers/job.js';
import { asPage, doneJob, raw } from './fixture.js';

/**
 * `darkroom review` as an operator runs it: its first line is the address; kill -9 right
 * after a decision was answered loses nothing (the answer is sent after the commit); Ctrl-C
 * ends it with 130.
 */

/** `darkroom review` started, its address read from its first line of stdout. */
async function startReview(job: TestJob): Promise<{ child: ReturnType<typeof runCli>; port: number; token: string; first: string }> {
  const child = runCli(['review', job.jobsFile], {}, { timeoutMs: 60_000 });
  const first = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.child.on('close', () => reject(new Error(`darkroom review ended before it printed its address: ${out}`)));
  });
  const m = /^review: http:\/\/127\.0\.0\.1:(\d+)\/\?token=([A-Za-z0-9_-]+)$/.exec(first);
  if (!m) throw new Error(`not an address line: ${first}`);
  return { child, port: Number(m[1]), token: m[2]!, first };
}

describe('darkroom review, the process', () => {
  let job: TestJob;

  beforeAll(async () => {
    job = await doneJob(6);
  });

  afterAll(() => job?.cleanup());

  it('prints the address first; kill -9 right after a decision was answered: the decision is in the ledger', async () => {
    const ledger = Ledger.open(job.ledgerFile, { readonly: true });
    const photos = ledger.reviews.photos().photos;
    ledger.close();
    for (const [n, p] of photos.slice(0, 2).entries()) {
      const { child, port, token } = await startReview(job);
      const { post } = asPage(port, token);
      const action = n % 2 === 0 ? 'reject' : 'accept';
      const body = JSON.stringify({ action, sha256: p.sha256, reason: action === 'reject' ? `kill ${n}` : null });
      const r = await raw(port, { method: 'POST', path: `/api/photos/${p.id}/decision`, headers: post, body });
      child.child.kill('SIGKILL');
      expect(r.status, r.body).toBe(200);
      const end = await child;
      expect(end.signal).toBe('SIGKILL');
      const after = Ledger.open(job.ledgerFile, { readonly: true });
      try {
        expect(after.reviews.decisions().get(p.id)).toMatchObject({ decision: action, reason: action === 'reject' ? `kill ${n}` : null });
        expect(after.integrityCheck()).toBe('ok');
      } finally {
        after.close();
      }
    }
  });

  it('ends on Ctrl-C with exit 130; a job never run is NO_LEDGER (exit 2)', async () => {
    const { child, first } = await startReview(job);
    expect(first).toMatch(/^review: http:\/\/127\.0\.0\.1:\d+\/\?token=/);
    child.child.kill('SIGINT');
    const end = await child;
    expect(end.code).toBe(130);
    expect(end.stderr).toContain('Ctrl-C to stop');
    const fresh = await makeJob({ photos: 0 });
    try {
      const r = await runCli(['review', fresh.jobsFile]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/ledger/i);
    } finally {
      fresh.cleanup();
    }
  });
});
