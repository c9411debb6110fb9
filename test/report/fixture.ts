import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { stringify } from 'yaml';
import { installClock, VirtualClock } from '../../src/clock.js';
import { Ledger } from '../../src/ledger/index.js';
import { discovered } from '../helpers/discovered.js';

export const START_MS = Date.UTC(2026, 2, 14, 22, 0, 0);
export const FAILED_REASON = 'task FAIL on step 1: the service could not find a face to restore (code 30012)';
export const HELD_REASON = 'create timed out after the request was written: outcome unknown, held (X-Request-Id dr-held-0001)';
export const SKIPPED_REASON = 'not an image (unsupported content)';
export const SECRET_KEY = 'sk-live-THIS-MUST-NEVER-APPEAR-1234';

/** A drawn "photo": sky, sun, hills; `after` in full colour, `before` faded, sepia and soft like an old print. */
export async function drawPhoto(
  file: string,
  seed: number,
  kind: 'before' | 'after',
  format: 'jpeg' | 'png' | 'webp' = 'jpeg',
): Promise<void> {
  const w = 640 + (seed % 3) * 80;
  const h = 480;
  const hue = (seed * 67) % 360;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}">
    <defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">
      <stop offset="0" stop-color="hsl(${hue},70%,45%)"/><stop offset="1" stop-color="hsl(${(hue + 40) % 360},80%,80%)"/>
    </linearGradient></defs>
    <rect width="100%" height="100%" fill="url(#sky)"/>
    <circle cx="${w * (0.25 + (seed % 4) * 0.15)}" cy="${h * 0.3}" r="${50 + seed * 4}" fill="hsl(${(hue + 180) % 360},90%,60%)"/>
    <path d="M0 ${h * 0.7} Q ${w * 0.3} ${h * 0.45} ${w * 0.6} ${h * 0.68} T ${w} ${h * 0.6} V ${h} H 0 Z" fill="hsl(${(hue + 100) % 360},55%,35%)"/>
    <path d="M0 ${h * 0.85} Q ${w * 0.5} ${h * 0.7} ${w} ${h * 0.9} V ${h} H 0 Z" fill="hsl(${(hue + 120) % 360},50%,22%)"/>
  </svg>`;
  mkdirSync(path.dirname(file), { recursive: true });
  let img = sharp(Buffer.from(svg));
  if (kind === 'before')
    img = sharp(await img.png().toBuffer())
      .modulate({ saturation: 0.15, brightness: 1.1 })
      .tint({ r: 200, g: 170, b: 130 })
      .blur(2.5);
  img = format === 'jpeg' ? img.jpeg({ quality: 85 }) : format === 'png' ? img.png() : img.webp();
  await img.toFile(file);
}

export interface Fixture {
  readonly dir: string;
  readonly jobsFile: string;
  readonly ledgerFile: string;
  readonly inputDir: string;
  readonly outputDir: string;
  /** Done items whose both files exist. */
  readonly completePairs: number;
  readonly done: number;
}

/**
 * A small finished night, written through the Ledger API under a virtual clock: 5 photos done
 * (one through two steps with a FAIL retried, one whose result file has since gone missing),
 * one failed, one held, one skipped, one still queued; calls logged along the way.
 */
export async function makeReportFixture(dir: string, opts: { memoryLedger?: boolean } = {}): Promise<Fixture & { ledger: Ledger }> {
  const inputDir = path.join(dir, 'photos');
  const outputDir = path.join(dir, 'restored');
  const ledgerFile = opts.memoryLedger ? ':memory:' : path.join(dir, 'state', 'darkroom.db');
  const jobsFile = path.join(dir, 'jobs.yaml');
  writeFileSync(
    jobsFile,
    stringify({
      service: { baseUrl: 'http://127.0.0.1:9', apiKeyEnv: 'DARKROOM_REPORT_TEST_KEY' },
      input: { dir: './photos' },
      output: { dir: './restored' },
      steps: [{ capability: 'restore' }, { capability: 'upscale' }],
      ledger: './state/darkroom.db',
    }),
  );

  const clock = new VirtualClock(START_MS);
  const restore = installClock(clock);
  try {
    const done = [
      { rel: 'album 1951/beach.jpg', fmt: 'jpeg' as const },
      { rel: 'album 1951/picnic.jpg', fmt: 'jpeg' as const },
      { rel: 'family/grandma & grandpa <wedding>.png', fmt: 'png' as const },
      { rel: 'loose/harbour.webp', fmt: 'webp' as const },
      { rel: 'loose/result-gone.jpg', fmt: 'jpeg' as const },
    ];
    const others = ['failed/no-face.jpg', 'held/timeout.jpg', 'queued/later.jpg'];
    let seed = 1;
    for (const d of done) await drawPhoto(path.join(inputDir, d.rel), seed++, 'before', d.fmt);
    for (const rel of others) await drawPhoto(path.join(inputDir, rel), seed++, 'before');
    mkdirSync(inputDir, { recursive: true });
    writeFileSync(path.join(inputDir, 'notes.txt'), 'not a photo');

    const ledger = Ledger.open(ledgerFile);
    const all = [...done.map((d) => d.rel), ...others];
    discovered(ledger, [
      ...all.map((rel) => ({ relPath: rel, srcPath: path.join(inputDir, rel), sizeBytes: 1000 })),
      { relPath: 'notes.txt', srcPath: path.join(inputDir, 'notes.txt'), sizeBytes: 11, skipReason: SKIPPED_REASON },
    ]);
    const idOf = new Map(ledger.items.all().map((r) => [r.rel_path, r.id]));
    const key = 'k_0123456789ab';
    let call = 0;
    const logCall = (method: string, endpoint: string, http = 200, code = 0) => {
      call++;
      ledger.calls.log({
        at_ms: clock.now(),
        key_fp: key,
        method,
        endpoint,
        http_status: http,
        code,
        request_id: `srv-${call}`,
        sent_request_id: `dr-call-${call}`,
        duration_ms: 120,
        error: null,
      });
    };
    const upload = (id: number) => {
      logCall('POST', '/api/v1/image/upload');
      ledger.items.move(id, 'queued', 'uploading', { key_fp: key });
      ledger.items.move(id, 'uploading', 'uploaded', {
        input_url: `https://cdn.example/u/${id}.jpg`,
        image_url: `https://cdn.example/u/${id}.jpg`,
      });
    };
    const task = (
      id: number,
      capability: string,
      n: number,
      outcome: 'SUCCESS' | 'FAIL' | 'FAILED',
      isLast: boolean,
      latencyMs: number,
    ) => {
      const item = ledger.items.get(id)!;
      const sub = ledger.submissions.begin(item, capability, key, `dr-${id}-${item.step_index}-${n}`);
      logCall('POST', `/api/v1/image/${capability}`);
      const taskId = `task-${id}-${item.step_index}-${n}`;
      ledger.submissions.accept(sub, ledger.items.get(id)!, {
        taskId,
        businessType: capability.toUpperCase(),
        responseRequestId: `srv-create-${id}-${n}`,
        waitHintMs: 5000,
        pollAtMs: clock.now() + 5000,
      });
      clock.advanceBy(latencyMs);
      logCall('GET', '/api/v1/tasks/{businessType}/{taskId}');
      const active = ledger.items.get(id)!;
      if (outcome === 'SUCCESS') ledger.tasks.succeeded(active, `https://results.example/${taskId}.jpg`, isLast);
      else if (outcome === 'FAIL') ledger.tasks.recreate(active, 'FAIL', 'task FAIL, retrying', clock.now());
      else ledger.tasks.failed(active, 'FAIL', FAILED_REASON);
    };
    const download = async (id: number, rel: string, seedOf: number) => {
      const item = ledger.items.get(id)!;
      ledger.outputs.start(item);
      const out = path.join(outputDir, rel.replace(/\.\w+$/, '.jpg'));
      await drawPhoto(out, seedOf, 'after', 'jpeg');
      ledger.outputs.done(ledger.items.get(id)!, out);
    };

    // the night: photos finish one after another, a few minutes apart
    clock.advanceBy(60_000);
    for (const [i, d] of done.entries()) {
      const id = idOf.get(d.rel)!;
      upload(id);
      if (i === 1) task(id, 'restore', 1, 'FAIL', false, 40_000);
      task(id, 'restore', i === 1 ? 2 : 1, 'SUCCESS', false, 30_000 + i * 5000);
      task(id, 'upscale', 1, 'SUCCESS', true, 20_000);
      await download(id, d.rel, i + 1);
      clock.advanceBy(7 * 60_000 + i * 60_000);
    }
    // the missing result: done in the ledger, file gone since
    const { rmSync } = await import('node:fs');
    rmSync(ledger.items.get(idOf.get('loose/result-gone.jpg')!)!.output_path!);

    // failed: the task ended FAIL with no attempts left
    const failedId = idOf.get('failed/no-face.jpg')!;
    upload(failedId);
    task(failedId, 'restore', 1, 'FAILED', false, 25_000);
    ledger.items.patch(failedId, 'failed', { request_id: 'srv-fail-777' });

    // held: the create's outcome is unknown
    const heldId = idOf.get('held/timeout.jpg')!;
    upload(heldId);
    const sub = ledger.submissions.begin(ledger.items.get(heldId)!, 'restore', key, 'dr-held-0001');
    clock.advanceBy(30_000);
    logCall('POST', '/api/v1/image/restore', 0, 0);
    ledger.submissions.ambiguous(
      sub,
      ledger.items.get(heldId)!,
      { httpStatus: null, code: null, responseRequestId: null, error: 'timeout' },
      HELD_REASON,
    );

    // a 429 along the way
    logCall('POST', '/api/v1/image/upload', 429, 1000);

    return { dir, jobsFile, ledgerFile, inputDir, outputDir, completePairs: done.length - 1, done: done.length, ledger };
  } finally {
    restore();
  }
}
