/**
 * `npm run test:crash`: the full crash test — by default 100 photos and at least 50
 * SIGKILLs under the hostile profile (see harness.ts). Options:
 *
 *   --photos N   --kills N   --seed N   --latency-ms N   --calls-per-minute N   --poll-cap-minutes N
 *
 * The polling cap (default 2 min here) also caps how long creates whose answers were lost
 * hold their task slots before any task was seen to end; a run may take the clean run's time
 * plus twice the cap (harness.ts).
 *
 * Exit 0 when every check holds, 1 otherwise.
 */
import { parseArgs } from 'node:util';
import { crashTest, formatCrashReport } from './harness.js';

const { values } = parseArgs({
  options: {
    photos: { type: 'string', default: '100' },
    kills: { type: 'string', default: '50' },
    seed: { type: 'string', default: '42' },
    'latency-ms': { type: 'string', default: '800' },
    'calls-per-minute': { type: 'string', default: '100' },
    'poll-cap-minutes': { type: 'string', default: '2' },
  },
});

const perMinute = Number(values['calls-per-minute']);
const started = Date.now();
const report = await crashTest({
  photos: Number(values.photos),
  kills: Number(values.kills),
  seed: Number(values.seed),
  latencyMs: Number(values['latency-ms']),
  limits: { callsPerMinute: perMinute, callsPerHour: Math.max(1000, perMinute * 10), activeTasks: 3 },
  pollCapMinutes: Number(values['poll-cap-minutes']),
  log: (line) => process.stderr.write(`${line}\n`),
});
process.stdout.write(`\ndarkroom crash test (hostile profile, seed ${values.seed}, ${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
process.stdout.write(`${formatCrashReport(report)}\n`);
const ok =
  report.mismatches.length === 0 &&
  report.problems.length === 0 &&
  report.tempFilesLeft === 0 &&
  report.orphans === 0 &&
  report.integrity === 'ok' &&
  report.kills >= Number(values.kills) &&
  report.windows.violations === 0;
process.stdout.write(ok ? 'PASS\n' : 'FAIL\n');
process.exit(ok ? 0 : 1);
