import { readFileSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprintKey } from '../../src/spec/key.js';
import { startSim, type RunningSim } from '../../src/sim/server.js';
import { runCli } from '../helpers/cli.js';
import { listenLocal } from '../helpers/http.js';
import { makeJob, type TestJob } from '../helpers/job.js';

/**
 * Issue 13, point 3, through the real CLI: a base URL that is not the service stops the run
 * within a minute (exit 2, one line naming the URL, every photo pending, the key nowhere);
 * an outage after the service has answered is waited out; `plan` checks the URL.
 */

const KEY = 'e2e-contact-key-7c41d2a9f0';
const env = { DARKROOM_TEST_KEY: KEY };
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function job(photos = 3): Promise<TestJob> {
  const j = await makeJob({ photos });
  cleanups.push(j.cleanup);
  return j;
}

/** A loopback port nothing listens on. */
async function deadPort(): Promise<string> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

/** A server that is not the API, giving one answer to every request; it counts requests and those that carried a key. */
async function fakeServer(
  status: number,
  type: string,
  body: string,
): Promise<{ origin: string; hits: () => number; keyed: () => number }> {
  let hits = 0;
  let keyed = 0;
  const srv = await listenLocal((req, res) => {
    hits++;
    if (req.headers['x-api-key'] !== undefined) keyed++;
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  });
  cleanups.push(() => srv.close());
  return { origin: srv.origin, hits: () => hits, keyed: () => keyed };
}

/** A web server: an HTML 404 for every path. */
const htmlServer = () => fakeServer(404, 'text/html; charset=utf-8', '<!doctype html><title>Not Found</title><h1>Not Found</h1>');

async function statusOf(j: TestJob): Promise<{ total: number; pending: number; failed: number; held: number; done: number }> {
  const s = await runCli(['status', j.jobsFile, '--json'], {});
  expect(s.code).toBe(0);
  return JSON.parse(s.stdout) as { total: number; pending: number; failed: number; held: number; done: number };
}

/** One fact, one line: after the start line, stderr holds the stop alone, naming the URL; the log file keeps its own record. */
function expectOneStopLine(out: string, url: string, j?: TestJob): void {
  const lines = out.trim().split('\n');
  const start = lines.findIndex((l) => l.startsWith('darkroom: running '));
  expect(start, out).toBeGreaterThanOrEqual(0);
  const after = lines.slice(start + 1);
  expect(after, out).toHaveLength(1);
  expect(after[0]).toMatch(/^stopped: /);
  expect(after[0]).toContain(url);
  expect(after[0]).toMatch(/check service\.baseUrl/);
  if (j) expect(readFileSync(path.join(path.dirname(j.ledgerFile), 'darkroom.log'), 'utf8')).toContain(after[0]!.slice('stopped: '.length));
}

describe('a base URL that is not the service', () => {
  it('nothing listens there: exit 2 within a minute, one line naming the URL, every photo pending', async () => {
    const j = await job(3);
    const url = await deadPort();
    const started = Date.now();
    const r = await runCli(['run', j.jobsFile, '--base-url', url], env, { timeoutMs: 90_000 });
    expect(r.code).toBe(2);
    expect(Date.now() - started).toBeLessThan(60_000);
    expectOneStopLine(r.stderr, url, j);
    expect(r.stderr).toMatch(
      /^stopped: no answer from the service at http:\/\/127\.0\.0\.1:\d+ for \d+ s since the run started \(ECONNREFUSED/m,
    );
    expect(`${r.stdout}${r.stderr}`).not.toContain(KEY);
    const s = await statusOf(j);
    expect(s).toMatchObject({ total: 3, pending: 3, failed: 0, held: 0, done: 0 });
  }, 100_000);

  it('a web server answering an HTML 404: exit 2 at once, the key never sent to it, every photo pending', async () => {
    const j = await job(3);
    const web = await htmlServer();
    const r = await runCli(['run', j.jobsFile, '--base-url', web.origin], env, { timeoutMs: 60_000 });
    expect(r.code).toBe(2);
    expectOneStopLine(r.stderr, web.origin, j);
    expect(r.stderr).toMatch(
      /is not the image service's API \(GET \/api\/v1\/credits answered HTTP 404 text\/html without the API's envelope\)/,
    );
    // One probe, without the key: a host that is not the service never receives it.
    expect(web.hits()).toBe(1);
    expect(web.keyed()).toBe(0);
    expect(`${r.stdout}${r.stderr}`).not.toContain(KEY);
    const s = await statusOf(j);
    expect(s).toMatchObject({ total: 3, pending: 3, failed: 0, held: 0, done: 0 });
  }, 60_000);

  it('a JSON stub that answers every request with success: exit 2 at once, the key never sent to it', async () => {
    const j = await job(2);
    // A catch-all JSON stub: every request "succeeds".
    const stub = await fakeServer(200, 'application/json', JSON.stringify({ code: 0, message: 'ok', requestId: 'stub-1', data: {} }));
    const r = await runCli(['run', j.jobsFile, '--base-url', stub.origin], env, { timeoutMs: 60_000 });
    expect(r.code).toBe(2);
    expectOneStopLine(r.stderr, stub.origin);
    expect(r.stderr).toMatch(/without the key answered HTTP 200, code 0: the API refuses a request without x-api-key/);
    expect(stub.hits()).toBe(1);
    expect(stub.keyed()).toBe(0);
    const s = await statusOf(j);
    expect(s).toMatchObject({ total: 2, pending: 2, failed: 0, held: 0, done: 0 });
  }, 60_000);

  it('plan: exit 2 with one line for an HTML 404 and for a dead port, with or without the key', async () => {
    const j = await job(2);
    const web = await htmlServer();
    const dead = await deadPort();
    for (const [url, e] of [
      [web.origin, env],
      [web.origin, {}],
      [dead, env],
    ] as const) {
      const p = await runCli(['plan', j.jobsFile, '--base-url', url], e, { timeoutMs: 60_000 });
      expect(p.code).toBe(2);
      const lines = p.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^darkroom: /);
      expect(lines[0]).toContain(url);
      expect(`${p.stdout}${p.stderr}`).not.toContain(KEY);
    }
    expect(web.keyed()).toBe(0);
  }, 60_000);
});

describe('an outage after the service answered', () => {
  let sim: RunningSim;

  it('is waited out with a countdown, and the run completes with one create per photo', async () => {
    // 3 photos and 3 slots: every create is made before the outage, so none can be cut
    // mid-flight (that would rightly hold its photo); only polls meet the outage.
    sim = await startSim({ keys: [KEY], seed: 4, latency: { medianMs: 3000, sigma: 0.6 }, outcomes: { fail: 0, error: 0, other: 0 } });
    cleanups.push(() => sim.close());
    const j = await job(3);
    const run = runCli(['run', j.jobsFile, '--base-url', sim.apiUrl], env, { timeoutMs: 110_000 });
    const fp = fingerprintKey(KEY);
    // Down once every create is in and a task has ended.
    for (;;) {
      const a = sim.model.audit();
      if ((a.keys[fp]?.creates ?? 0) >= 3 && (a.tasksByStatus.SUCCESS ?? 0) >= 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await sim.suspendApi();
    await new Promise((r) => setTimeout(r, 20_000));
    await sim.resumeApi();
    const r = await run;
    expect(r.stderr).toMatch(/service unreachable since \d\d:\d\d:\d\d \(NOT_SENT\); waiting it out, next try in \d+ s/);
    expect(r.stderr).toMatch(/the service answers again \(unreachable for (1\d|2\d|3\d|4\d) s\)/);
    expect(r.code).toBe(0);
    const a = sim.model.audit();
    expect(Object.values(a.createsPerSource)).toEqual([1, 1, 1]);
    expect(await statusOf(j)).toMatchObject({ total: 3, done: 3, pending: 0 });
  }, 120_000);
});

describe("a base URL pasted with the API's path", () => {
  // The service's every path begins with /api/v1: `https://host/api/v1` is the address a user
  // copies from the docs. It is understood as `https://host`, by every command.
  it('/api/v1 or /api/v1/ (job file, flag, environment): plan, credits and run act as on the right URL', async () => {
    const sim = await startSim({ keys: [KEY], seed: 8, latency: { medianMs: 200, sigma: 0.2 } });
    cleanups.push(() => sim.close());
    const j = await makeJob({ photos: 3, baseUrl: `${sim.apiUrl}/api/v1` });
    cleanups.push(j.cleanup);
    const p = await runCli(['plan', j.jobsFile], env);
    expect(p.code).toBe(0);
    expect(p.stdout).toMatch(/account +key k_\w+: \d+ credits remaining/);
    expect(p.stdout + p.stderr).not.toMatch(/api\/v1\/api\/v1|404/);
    const c = await runCli(['credits', '--base-url', `${sim.apiUrl}/api/v1/`, '--json'], { DARKROOM_API_KEY: KEY });
    expect(c.code).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({ keys: [{ remainingCredit: expect.any(Number) }] });
    const r = await runCli(['run', j.jobsFile], { ...env, DARKROOM_BASE_URL: `${sim.apiUrl}/api/v1/` });
    expect(r.stderr).not.toMatch(/fix the input/);
    expect(r.code).toBe(0);
    expect(await statusOf(j)).toMatchObject({ total: 3, done: 3, failed: 0, pending: 0 });
    // No call went to a path that is not the service's.
    expect(sim.model.audit().keys[fingerprintKey(KEY)]).toMatchObject({ creates: 3, uploads: 3 });
  }, 90_000);
});
