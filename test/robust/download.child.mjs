// A child process for downloads.memory.test.ts: one download through the real download
// stage (the built code, as the CLI runs it), then its own peak RSS on stdout. A process of
// its own so the figure is the download's alone, not the test runner's.
import { Ledger } from '../../dist/ledger/index.js';
import { silentLogger } from '../../dist/log.js';
import { downloadStage } from '../../dist/stages/download.js';

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
const outcome = await downloadStage(ledger, item, {
  outputDir,
  allowHttp: true,
  deadlineMs: 10 * 60_000,
  random: Math.random,
  log: silentLogger(),
});
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
