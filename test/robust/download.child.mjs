// A child process for downloads.memory.test.ts: one download through the real download
// stage (the built code, as the CLI runs it), then its own peak RSS on stdout. A process of
// its own so the figure is the download's alone, not the test runner's.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../dist/config/index.js';
import { Ledger } from '../../dist/ledger/index.js';
import { silentLogger } from '../../dist/log.js';
import { OutputWriter } from '../../dist/outputs/writer.js';
import { RunControl } from '../../dist/run/control.js';
import { RunEvents } from '../../dist/run/events.js';
import { ServiceContact } from '../../dist/run/serviceContact.js';
import { downloadStage } from '../../dist/run/stages/download.js';

const [url, outputDir] = process.argv.slice(2);
const ledger = Ledger.open(':memory:');
// The item as a run's discovery records it (ledger/discovery.ts), its content a stand-in hash.
ledger.discovery.reconcile(
  [{ name: 'big.png', src: '/in/big.png', sizeBytes: 1, mtimeMs: null, contentHash: 'b'.repeat(64), skipReason: null }],
  [],
  { keyFps: [] },
);
ledger.items.move(1, 'queued', 'uploading', { key_fp: 'k' });
ledger.items.move(1, 'uploading', 'uploaded', { input_url: 'http://x/u.png' });
const s = ledger.submissions.begin(ledger.items.get(1), 'enhance', 'k', 'dr-1');
ledger.submissions.accept(s, ledger.items.get(1), {
  taskId: 't1',
  businessType: 'ENHANCE',
  responseRequestId: null,
  waitHintMs: null,
  pollAtMs: 0,
});
const item = ledger.tasks.succeeded(ledger.items.get(1), url, true);
const startRss = process.resourceUsage().maxRSS * 1024;
// The run's context as a run's prepare phase makes it (run/phases/prepare.ts), for a job
// of one enhance step without metadata writing into outputDir.
const jobDir = path.join(path.dirname(outputDir), '.darkroom-job');
mkdirSync(path.join(jobDir, 'photos'), { recursive: true });
const jobsFile = path.join(jobDir, 'jobs.yaml');
writeFileSync(
  jobsFile,
  `input: { dir: ./photos }\noutput: { dir: ${JSON.stringify(outputDir)}, metadata: none }\nsteps: [{ capability: enhance }]\n`,
);
const config = loadConfig(jobsFile, { env: {} });
const log = silentLogger();
const request = { config, baseUrl: 'http://sim.invalid', keys: [], seams: { random: Math.random, downloadDeadlineMs: 10 * 60_000 } };
const ctx = {
  config,
  baseUrl: request.baseUrl,
  keys: [],
  ledger,
  log,
  control: new RunControl(ledger, log),
  events: new RunEvents(ledger, config, {}),
  outputs: new OutputWriter(config, ledger, log),
  contact: new ServiceContact(Math.random),
  random: Math.random,
  request,
};
const outcome = await downloadStage(ctx, item);
const after = ledger.items.get(1);
process.stdout.write(
  JSON.stringify({
    outcome,
    state: after.state,
    output: after.output_path,
    reason: after.reason,
    startRss,
    peakRss: process.resourceUsage().maxRSS * 1024,
  }),
);
ledger.close();
