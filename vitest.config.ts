import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that wait longest (minutes of rolling windows, kills and restarts) start first.
 * Without a cache (a fresh clone, CI) vitest starts the largest files first, and the
 * slow-answer crash test, a small file, began last and alone: a minute more on 2 cores.
 */
const LONG_FIRST = [
  'test/crash/crash.slow.test.ts',
  'test/crash/crash.test.ts',
  'test/e2e/cli.shared-key.test.ts',
  'test/e2e/cli.guards.test.ts',
];

class LongFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONG_FIRST.findIndex((p) => f.moduleId.endsWith(p));
      return i === -1 ? LONG_FIRST.length : i;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

/**
 * Runs of minutes in real time that `npm test` holds in a shorter form (simulation, fewer
 * trials); their own npm scripts run them (package.json: test:machines, test:lock-races).
 */
const LONG_ONLY = ['test/e2e/cli.shared-key.machines.test.ts'];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...(process.env.DARKROOM_LONG_TESTS ? [] : LONG_ONLY)],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Three files at a time on two cores: the longest files mostly wait (a key's minute
    // window, a run killed and restarted), so a third keeps the cores busy meanwhile
    // (vitest alone, 1,154 tests: 651 s with two, 523 s with three, on a quiet machine).
    maxWorkers: 3,
    // Each file does not get a fresh module graph: importing src/ anew for each of some 190
    // files was half the CPU of the small unit-test files. Nothing in src/ keeps state between
    // runs but the installed clock, which every test that installs one gives back (its undo).
    isolate: false,
    sequence: { sequencer: LongFirst },
    // .ci/run asks for a JSON report beside the console one, to print "N passed, N failed".
    ...(process.env.DARKROOM_VITEST_JSON ? { reporters: ['default', 'json'], outputFile: { json: process.env.DARKROOM_VITEST_JSON } } : {}),
  },
});
