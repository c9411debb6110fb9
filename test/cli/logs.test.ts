import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { fileLogger } from '../../src/log.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeJob, makeTempDir, type TestJob } from '../helpers/job.js';

const CANARY = 'canary-key-Zx81Qw77Lm03';
const FP = fingerprintKey(CANARY);

/** Every byte darkroom left on disk for a job (ledger, its WAL and SHM, the log, the lock, outputs). */
function filesWithCanary(dir: string, secret: string): string[] {
  const hits: string[] = [];
  for (const rel of readdirSync(dir, { recursive: true }).map(String)) {
    const p = path.join(dir, rel);
    if (!statSync(p).isFile()) continue;
    if (readFileSync(p).includes(Buffer.from(secret))) hits.push(rel);
  }
  return hits;
}

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}
const readLog = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LogLine);

describe('logs of a whole run, and the key kept out of everything', () => {
  let sim: RunningSim;
  let job: TestJob;
  let run: CliResult;

  beforeAll(async () => {
    // A rough night: rate-limit answers, dropped creates and broken bodies, so error paths log too.
    sim = await startSim({
      keys: [CANARY],
      seed: 4,
      latency: { medianMs: 500, sigma: 0.3 },
      outcomes: { error: 0.2 },
      faults: {
        spurious429: { probability: 0.15 },
        droppedCreate: { probability: 0.2 },
        malformedJson: { probability: 0.1, createsOnly: true },
      },
    });
    job = await makeJob({ photos: 6, steps: [{ capability: 'enhance' }] });
    run = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: CANARY }, { timeoutMs: 300_000 });
  }, 320_000);

  afterAll(async () => {
    await sim?.close();
    job?.cleanup();
  });

  it('finished (some photos held or failed by the faults)', () => {
    expect([0, 1]).toContain(run.code);
  });

  it('no trace of the key in the log, the ledger files, any output, stdout or stderr', async () => {
    expect(filesWithCanary(job.dir, CANARY)).toEqual([]);
    expect(run.stdout).not.toContain(CANARY);
    expect(run.stderr).not.toContain(CANARY);
    const status = await runCli(['status', job.jobsFile, '--json'], { DARKROOM_TEST_KEY: CANARY });
    const report = await runCli(['report', job.jobsFile, '--out', path.join(job.dir, 'report.html')], { DARKROOM_TEST_KEY: CANARY });
    expect(status.stdout + status.stderr + report.stdout + report.stderr).not.toContain(CANARY);
    expect(filesWithCanary(job.dir, CANARY)).toEqual([]);
    expect(sim.model.audit().keyLeaks).toEqual([]);
  });

  it('every call is one info line with method, path, HTTP status, code, requestId and duration', async () => {
    const lines = readLog(job.ledgerFile.replace(/\.db$/, '.log'));
    const calls = lines.filter((l) => l.msg === 'call');
    const s = JSON.parse((await runCli(['status', job.jobsFile, '--json'])).stdout) as { calls: { total: number } };
    expect(calls.length).toBe(s.calls.total);
    expect(calls.length).toBe(sim.model.audit().keys[FP]!.calls);
    for (const c of calls) {
      expect(c.level).toBe(30);
      expect(c.method).toMatch(/^(GET|POST)$/);
      expect(c.path).toMatch(/^\/api\/v1\//);
      expect(typeof c.ms).toBe('number');
      expect(c.keyFp).toBe(FP);
      expect(c.sentRequestId).toMatch(/^[A-Za-z0-9_-]+$/);
      // a dropped connection has no status, code or service requestId; every answered call has all three
      if (c.httpStatus !== null) {
        expect(typeof c.httpStatus).toBe('number');
        if (c.httpStatus === 200 || c.httpStatus === 429) expect(c.requestId).toBeTruthy();
      }
      expect('code' in c).toBe(true);
    }
    expect(calls.some((c) => c.httpStatus === 429)).toBe(true);
    expect(calls.some((c) => c.httpStatus === null)).toBe(true);
  });

  it('warnings reach stderr as short human lines, never JSON', () => {
    const lines = run.stderr.trim().split('\n');
    const warnings = lines.filter((l) => l.startsWith('darkroom: warning: '));
    expect(warnings.length).toBeGreaterThan(0);
    // Named by the photo's input path (issue 13), not by its ledger id.
    expect(warnings.some((w) => /^darkroom: warning: [^:]+\.(jpg|png|webp): create held: outcome unknown/.test(w))).toBe(true);
    expect(warnings.filter((w) => /\(item \d+/.test(w))).toEqual([]);
    for (const l of lines) expect(l.startsWith('{')).toBe(false);
  });

  it('the log is readable by its owner only', () => {
    expect(statSync(job.ledgerFile.replace(/\.db$/, '.log')).mode & 0o777).toBe(0o600);
  });
});

describe('an invalid key, the log level, and the logger itself', () => {
  it('a run refused with 401 (exit 3) leaves no trace of the key either', async () => {
    const sim = await startSim({ keys: ['the-real-key-1234'], seed: 1 });
    const job = await makeJob({ photos: 2 });
    try {
      const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: CANARY });
      expect(r.code).toBe(3);
      expect(r.stdout + r.stderr).toMatch(/401/);
      expect(r.stdout + r.stderr).not.toContain(CANARY);
      expect(filesWithCanary(job.dir, CANARY)).toEqual([]);
      const lines = readLog(job.ledgerFile.replace(/\.db$/, '.log'));
      expect(lines.some((l) => l.msg === 'call' && l.httpStatus === 401)).toBe(true);
    } finally {
      await sim.close();
      job.cleanup();
    }
  });

  it('log.level warn keeps the call lines out of the file', async () => {
    const sim = await startSim({ keys: [CANARY], seed: 1, latency: { medianMs: 300, sigma: 0.2 } });
    const job = await makeJob({ photos: 1, steps: [{ capability: 'enhance' }], extra: { log: { level: 'warn' } } });
    try {
      const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: CANARY }, { timeoutMs: 300_000 });
      expect(r.code).toBe(0);
      const text = readFileSync(job.ledgerFile.replace(/\.db$/, '.log'), 'utf8');
      expect(text).not.toMatch(/"msg":"call"/);
      expect(text).not.toMatch(/"msg":"run started"/);
    } finally {
      await sim.close();
      job.cleanup();
    }
  }, 320_000);

  it('masks the key wherever it hides: header fields, error messages, stacks, nested objects', () => {
    const dir = makeTempDir();
    const file = path.join(dir, 'x.log');
    const human: string[] = [];
    const log = fileLogger(file, 'info', { secrets: [CANARY], human: (l) => human.push(l) });
    const err = new Error(`request failed with x-api-key ${CANARY}`);
    log.error(
      { err, headers: { 'x-api-key': CANARY }, req: { headers: { 'x-api-key': CANARY } }, note: `k=${CANARY}`, deep: { a: { b: CANARY } } },
      `boom ${CANARY}`,
    );
    log.warn({ item: 4, requestId: 'r-1', sentRequestId: 'dr-1' }, 'create held: outcome unknown');
    log.debug({ method: 'GET', path: '/api/v1/credits', httpStatus: 200, code: 0, requestId: 'r-2', ms: 12, key: FP }, 'call');
    log.debug({ anything: 1 }, 'other debug');
    log.flush();
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(CANARY);
    expect(text).toContain('[redacted]');
    const lines = readLog(file);
    expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/^boom /), 'create held: outcome unknown', 'call']);
    expect(lines[2]).toMatchObject({
      level: 30,
      method: 'GET',
      path: '/api/v1/credits',
      httpStatus: 200,
      code: 0,
      requestId: 'r-2',
      ms: 12,
      keyFp: FP,
    });
    expect(human).toHaveLength(2);
    expect(human[0]).toMatch(/^darkroom: error: boom /);
    expect(human[1]).toBe('darkroom: warning: create held: outcome unknown (item 4, requestId r-1, X-Request-Id dr-1)');
    expect(human.join('\n')).not.toContain(CANARY);
  });
});
