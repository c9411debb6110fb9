import { hideBin } from 'yargs/helpers';
import { SystemClock, installClock } from '../clock.js';
import { terminalSafe } from '../display.js';
import { describeError } from './errors.js';
import { main } from './main.js';
import { exitWhenWritten, quietOnClosedPipes } from './pipes.js';

// A closed pipe on stdout (`darkroom status --watch | head -1`) ends the process quietly.
quietOnClosedPipes(process, (code) => process.exit(code));

// Tests only (the guards' tests): the clock shifted by this many ms, so `--until` is reached in seconds.
const skew = Number(process.env.DARKROOM_TEST_CLOCK_SKEW_MS ?? '');
if (Number.isFinite(skew) && skew !== 0) installClock(new SystemClock(skew));

main(hideBin(process.argv)).then(exitWhenWritten, (e: unknown) => {
  const d = describeError(e);
  process.stderr.write(`${terminalSafe(d.line)}\n`);
  exitWhenWritten(d.exitCode);
});
