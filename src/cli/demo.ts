import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '../simulator.js';
import { describeError } from './errors.js';
import { progressFor } from './commands/progress.js';
import { runCommand } from './commands/run.js';
import { terminalSafe } from '../display.js';
import { exitWhenWritten } from './pipes.js';

/**
 * `npm run demo`: the simulator in-process on free loopback ports, jobs.example.yaml run
 * against it, results in out/. No key or network needed. Run it twice: the second run
 * finds everything done and makes no calls.
 */
async function demo(): Promise<number> {
  // A jobs file may be named (the demo's own test runs it on a copy); by default the example.
  const jobs = process.argv[2] ?? fileURLToPath(new URL('../../jobs.example.yaml', import.meta.url));
  const key = 'demo-key';
  // Tasks here take ~1.5 s, not the ~20 s of the real service, so the demo ends in seconds.
  const sim = await startSimulator({ keys: [key], seed: 7, latencyMs: 1500, sigma: 0.4 });
  process.stderr.write(`darkroom demo: simulator at ${sim.url} (results from ${sim.resultUrl})\n`);
  const rel = (p: string) => path.relative(process.cwd(), p) || '.';
  try {
    // The jobs file as a user in this folder would type it: the run's next-step lines show it.
    const r = await runCommand(
      { jobs: rel(jobs), baseUrl: sim.url },
      {
        env: { ...process.env, DARKROOM_API_KEY: key },
        stderr: (l) => process.stderr.write(`${terminalSafe(l)}\n`),
        progress: await progressFor(process.stderr, process.env, false),
      },
    );
    process.stdout.write(`${terminalSafe(r.report)}\n`);
    if (r.problems !== '') process.stderr.write(`${terminalSafe(r.problems)}\n`);
    const audit = sim.audit();
    const k = Object.values(audit.keys)[0];
    if (k) {
      process.stdout.write(
        `simulator audit: ${k.calls} calls, at most ${k.maxCallsInAnyMinute} in any minute, ${k.maxActiveTasks} tasks active at once at most, ${audit.keyLeaks.length} key leaks\n`,
      );
    }
    process.stdout.write(`results are in ${rel(r.outputDir)}/ · look again with: npx darkroom status ${rel(jobs)}\n`);
    process.stdout.write(
      `before and after, side by side: npx darkroom report ${rel(jobs)} --out ${rel(path.join(r.outputDir, 'report.html'))} (then open it in a browser)\n`,
    );
    return r.result.exitCode;
  } finally {
    await sim.close();
  }
}

demo().then(exitWhenWritten, (e: unknown) => {
  process.stderr.write(`${terminalSafe(describeError(e).line)}\n`);
  exitWhenWritten(describeError(e).exitCode);
});
