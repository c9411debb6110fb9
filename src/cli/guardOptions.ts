import type { Argv } from 'yargs';

/** The spending guards' options and `--json` of `darkroom run` (kept here so main.ts stays a list of commands). */
export function withGuardOptions<T>(y: Argv<T>) {
  return y
    .option('max-photos', {
      type: 'number',
      requiresArg: true,
      describe: 'start at most N new photos in this run; those started are finished (exit 4 if photos are left)',
    })
    .option('max-credits', {
      type: 'number',
      requiresArg: true,
      describe: 'start a photo only when its every step fits in N credits spent since the run began (wins over limits.maxCredits)',
    })
    .option('max-duration', {
      type: 'string',
      requiresArg: true,
      describe: 'stop starting work after this long, e.g. 90m, 6h, 1h30m; paid work is still finished',
    })
    .option('until', {
      type: 'string',
      requiresArg: true,
      describe: 'stop starting work at this local time (24-hour HH:MM, the next such moment), e.g. 07:00',
    })
    .option('json', {
      type: 'boolean',
      default: false,
      describe: 'newline-delimited JSON events on stdout: one per photo done/failed/held/skipped, then a summary (docs/guide/commands.md)',
    })
    .example('darkroom run jobs.yaml --max-photos 50', 'try the job on 50 photos first; run again (without it) for the rest')
    .example(
      'darkroom run jobs.yaml --until 07:00 --max-credits 2000',
      'an overnight run that stops starting work at 7 am or 2,000 credits',
    );
}
