import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import type { Ledger } from '../../src/ledger/index.js';
import { silentLogger } from '../../src/log.js';
import { OutputWriter } from '../../src/outputs/writer.js';
import type { RunContext, RunSeams } from '../../src/run/context.js';
import { RunControl } from '../../src/run/control.js';
import { RunEvents } from '../../src/run/events.js';
import { ServiceContact } from '../../src/run/serviceContact.js';
import { PhotoSupply } from '../../src/run/supply.js';

/**
 * A run's context for a stage's own test (the download stage called directly): a ledger and
 * an output folder, the rest as a run makes it (run/phases/prepare.ts), the seams as given.
 * The job is one enhance step without metadata; its file sits in a folder beside `outputDir`.
 */
export function stageContext(o: { readonly ledger: Ledger; readonly outputDir: string; readonly seams?: RunSeams }): RunContext {
  const dir = path.join(path.dirname(path.resolve(o.outputDir)), '.darkroom-job');
  mkdirSync(path.join(dir, 'photos'), { recursive: true });
  const file = path.join(dir, 'jobs.yaml');
  writeFileSync(
    file,
    `input: { dir: ./photos }\noutput: { dir: ${JSON.stringify(path.resolve(o.outputDir))}, metadata: none }\nsteps: [{ capability: enhance }]\n`,
  );
  const config = loadConfig(file, { env: {} });
  const log = silentLogger();
  const random = () => 0.5;
  const seams: RunSeams = { random, downloadDeadlineMs: 60_000, ...o.seams };
  return {
    config,
    baseUrl: 'http://sim.invalid',
    keys: [],
    ledger: o.ledger,
    log,
    control: new RunControl(o.ledger, log),
    events: new RunEvents(o.ledger, config, {}),
    outputs: new OutputWriter(config, o.ledger, log, { fs: seams.outputFs }),
    contact: new ServiceContact(random),
    supply: new PhotoSupply(),
    random,
    request: { config, baseUrl: 'http://sim.invalid', keys: [], seams },
  };
}
