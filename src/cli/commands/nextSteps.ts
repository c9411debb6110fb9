import type { RunResult } from '../../run/context.js';

/** A path as a shell would take it back: quoted only when it needs to be. */
export function shellArg(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The run's last lines: what to do next, as commands to copy, with the jobs file as the
 * user typed it. Held photos first (their creates' outcome is unknown: re-creating may
 * charge again, so it is the operator's call), then failed ones, then the report.
 * Nothing is suggested after a stop that says what to do on its own line (a config, disk
 * or ledger stop, an account problem) or after an interrupt (its `interrupted:` line says
 * how to continue); after a limit the operator set, the rerun comes first.
 */
export function nextStepLines(result: Pick<RunResult, 'status' | 'interrupted' | 'halt' | 'accountStop'>, jobs: string): string[] {
  if (result.interrupted || result.accountStop || (result.halt && result.halt.kind !== 'limit')) return [];
  const j = shellArg(jobs);
  const s = result.status;
  const steps: Array<[string, string]> = [];
  if (result.halt?.kind === 'limit' && s.pending > 0)
    steps.push([`darkroom run ${j}`, `continue: ${s.pending} photo(s) not started or not finished`]);
  if (s.held > 0)
    steps.push([
      `darkroom retry --held ${j}`,
      `${s.held} held: outcome unknown or timed out; lists them and asks (re-creating may charge again)`,
    ]);
  if (s.failed > 0) steps.push([`darkroom retry --failed ${j}`, `${s.failed} failed: lists them, says what retrying costs and asks`]);
  if (s.total > 0) steps.push([`darkroom report ${j}`, 'before and after, with every problem, in one HTML page']);
  if (steps.length === 0) return [];
  const width = Math.max(...steps.map(([c]) => c.length));
  return ['next:', ...steps.map(([c, why]) => `  ${c.padEnd(width)}   # ${why}`)];
}
