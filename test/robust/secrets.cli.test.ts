import { readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { downloadStage } from '../../src/run/stages/download.js';
import { stageContext } from '../helpers/runContext.js';
import { startSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { listenLocal } from '../helpers/http.js';
import { makeJob, makeTempDir } from '../helpers/job.js';
import { succeededItem } from '../helpers/discovered.js';

/**
 * Issue 4, point 6 (L5): a canary key appears nowhere — stdout, stderr, the log, the
 * ledger and its side files — and reaches no host but the API's, not even when the API
 * answers with a redirect to another origin. The ledger and the log are owner-only files.
 */

const CANARY = 'CANARY-k3y-9f8e7d6c5b4a3210-do-not-leak';
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

async function server(handler: (req: http.IncomingMessage, res: http.ServerResponse, seen: Seen[]) => void) {
  const seen: Seen[] = [];
  const s = await listenLocal((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => handler(req, res, seen));
  });
  cleanups.push(s.close);
  return { url: s.origin, seen };
}

/** Every file under `dir`, with its bytes. */
function filesUnder(dir: string): { file: string; bytes: Buffer }[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const file = path.join(e.parentPath, e.name);
      return { file, bytes: readFileSync(file) };
    });
}

const mentions = (bytes: Buffer | string) =>
  Buffer.from(bytes).includes(Buffer.from(CANARY)) || Buffer.from(bytes).includes(Buffer.from(CANARY, 'utf16le'));

describe('the key', () => {
  it('is nowhere in output, log or ledger after a whole job under faults, and never reached the result host', async () => {
    const sim = await startSim({ keys: [CANARY], seed: 11, latency: { medianMs: 300, sigma: 0.3 }, faults: 'flaky' });
    cleanups.push(() => sim.close());
    const job = await makeJob({ photos: 12, steps: [{ capability: 'enhance' }], extra: { log: { level: 'debug' } } });
    cleanups.push(job.cleanup);
    const r = await runCli(['run', job.jobsFile, '--base-url', sim.apiUrl], { DARKROOM_TEST_KEY: CANARY });
    expect([0, 1, 3]).toContain(r.code);
    const status = await runCli(['status', job.jobsFile, '--json']);
    const report = await runCli(['report', job.jobsFile, '--out', path.join(job.dir, 'report.html')], { DARKROOM_TEST_KEY: CANARY });

    for (const out of [r.stdout, r.stderr, status.stdout, status.stderr, report.stdout, report.stderr]) expect(mentions(out)).toBe(false);
    const files = filesUnder(job.dir);
    expect(files.some((f) => f.file.endsWith('.log'))).toBe(true);
    expect(files.some((f) => f.file.endsWith('-wal'))).toBe(true);
    for (const f of files) expect(mentions(f.bytes), f.file).toBe(false);

    // The ledger, its WAL and shared-memory files and the log: owner-only.
    const state = path.dirname(job.ledgerFile);
    for (const f of readdirSync(state)) {
      if (/\.(db|log)$|-wal$|-shm$/.test(f)) expect(statSync(path.join(state, f)).mode & 0o777, f).toBe(0o600);
    }
    // The result origin is a host other than the API's: the simulator records any key it saw there.
    expect(sim.model.audit().keyLeaks).toEqual([]);
  });

  it.each([301, 302, 307, 308])('is not carried to another origin when the API answers %i', async (status) => {
    const elsewhere = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 0, message: 'ok', requestId: 'else-1', data: { imageUrl: 'http://127.0.0.1:9/x.jpg' } }));
    });
    const api = await server((req, res) => {
      res.writeHead(status, { location: `${elsewhere.url}${req.url}` });
      res.end();
    });
    const job = await makeJob({ photos: 2, steps: [{ capability: 'enhance' }] });
    cleanups.push(job.cleanup);
    const r = await runCli(['run', job.jobsFile, '--base-url', api.url], { DARKROOM_TEST_KEY: CANARY });

    // The base URL got the run's first contact, without the key (issue 13): a base URL that
    // redirects never receives the key at all ...
    expect(api.seen).toHaveLength(1);
    expect(api.seen[0]!.headers['x-api-key']).toBeUndefined();
    // ... the other origin got nothing at all: a redirect is never followed.
    expect(elsewhere.seen.filter((s) => s.headers['x-api-key'] !== undefined)).toEqual([]);
    expect(elsewhere.seen).toEqual([]);
    // A config stop (issue 12, point 7): exit 2, the target named, no photo failed for it.
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`stopped: the base URL redirects to ${elsewhere.url}/api/v1/credits (GET /api/v1/credits, HTTP ${status})`);
    expect(r.stdout).toMatch(/· 0 failed ·/);
    expect(mentions(r.stdout + r.stderr)).toBe(false);
    for (const f of filesUnder(job.dir)) expect(mentions(f.bytes), f.file).toBe(false);
  });

  it('is not sent with result downloads, nor after a result host redirects to another origin', async () => {
    const jpeg = readFileSync(new URL('../../examples/photos/harbour.jpg', import.meta.url));
    const cdn = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(jpeg.length) });
      res.end(jpeg);
    });
    const results = await server((req, res) => {
      res.writeHead(307, { location: `${cdn.url}${req.url}` });
      res.end();
    });
    const dir = makeTempDir();
    const ledger = Ledger.open(':memory:');
    const item = succeededItem(ledger, 'p.jpg', `${results.url}/r/p.jpg`);
    const outcome = await downloadStage(
      stageContext({ ledger, outputDir: path.join(dir, 'out'), seams: { downloadDeadlineMs: 10_000 } }),
      item,
    );
    expect(outcome).toBe('done');
    for (const seen of [...results.seen, ...cdn.seen]) {
      expect(seen.headers['x-api-key']).toBeUndefined();
      expect(seen.headers.authorization).toBeUndefined();
    }
    expect(cdn.seen).toHaveLength(1);
  });
});

describe('a key pasted where the job wants the NAME of its variable', () => {
  // service.apiKeyEnv holds a variable's name; a key put there must not be echoed into a
  // terminal or a CI log by any command, and no command goes on with it.
  const PASTED = [
    ['service.apiKeyEnv', 'sk_live_9f8e7d6c5b4a39281706f5e4d3c2b1a0', (k: string) => ({ apiKeyEnv: k })],
    ['service.apiKeyEnv', 'sk-proj-Ab12Cd34Ef56Gh78Ij90', (k: string) => ({ apiKeyEnv: k })],
    [
      'service.keys item 2: apiKeyEnv',
      '9f8e7d6c5b4a39281706f5e4d3c2b1a0',
      (k: string) => ({ keys: [{ apiKeyEnv: 'DARKROOM_TEST_KEY' }, { apiKeyEnv: k }] }),
    ],
  ] as const;
  const COMMANDS = [
    ['run'],
    ['plan'],
    ['status'],
    ['retry', '--failed', '--yes'],
    ['report', '--out', 'r.html'],
    ['manifest'],
    ['credits'],
    ['usage'],
  ];

  it.each(PASTED)(
    '%s: every command exits 2 with one line that says so, the key shown nowhere',
    async (field, key, service) => {
      const job = await makeJob({ photos: 1 });
      cleanups.push(job.cleanup);
      const doc = readFileSync(job.jobsFile, 'utf8').replace(/service:\n(  .*\n)+/, '');
      const { stringify } = await import('yaml');
      const { writeFileSync } = await import('node:fs');
      writeFileSync(job.jobsFile, stringify({ service: { baseUrl: 'http://127.0.0.1:9', ...service(key) } }) + doc);
      // Every command for the first; run, plan and status for the other forms (one code path).
      const commands = key === PASTED[0][1] ? COMMANDS : COMMANDS.slice(0, 3);
      const results = await Promise.all(
        commands.map((c) =>
          runCli([...c.slice(0, 1), job.jobsFile, ...c.slice(1)], { DARKROOM_TEST_KEY: 'x', [key]: 'y' }, { cwd: job.dir }),
        ),
      );
      for (const [i, r] of results.entries()) {
        const out = r.stdout + r.stderr;
        expect(out, commands[i]!.join(' ')).not.toContain(key);
        expect(out).not.toContain(key.slice(8, 20));
        expect(r.code, `${commands[i]!.join(' ')}: ${out}`).toBe(2);
        const lines = r.stderr.trim().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(field);
        expect(lines[0]).toMatch(/the NAME of the environment variable that holds the key/);
        expect(lines[0]).toMatch(/looks like a key/);
      }
    },
    60_000,
  );
});
