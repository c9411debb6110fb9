import { describe, expect, it } from 'vitest';
import { nextStepLines } from '../../src/cli/commands/nextSteps.js';

type Arg = Parameters<typeof nextStepLines>[0];
const status = (s: Partial<{ total: number; pending: number; held: number; failed: number; skipped: number }>) =>
  ({ total: 10, pending: 0, held: 0, failed: 0, skipped: 0, ...s }) as unknown as Arg['status'];
const result = (r: Partial<Arg> & { status: Arg['status'] }): Arg => ({
  interrupted: false,
  halt: undefined,
  accountStop: undefined,
  ...r,
});
const commands = (lines: string[]) => lines.slice(1).map((l) => l.trim().split('   #')[0]!.trim());

describe("the run's next-step lines", () => {
  it('held, then failed (skipped ones are not retried), then the report, with the jobs file as typed and quoted when it must be', () => {
    const lines = nextStepLines(result({ status: status({ held: 1, failed: 2, skipped: 1 }) }), 'my jobs.yaml');
    expect(lines[0]).toBe('next:');
    expect(commands(lines)).toEqual([
      "darkroom retry --held 'my jobs.yaml'",
      "darkroom retry --failed 'my jobs.yaml'",
      "darkroom report 'my jobs.yaml'",
    ]);
    expect(lines[2]).toContain('2 failed');
  });

  it('after a limit the operator set: the rerun first', () => {
    const halt = { kind: 'limit', message: 'at a limit you set', exitCode: 4, immediate: false } as Arg['halt'];
    expect(commands(nextStepLines(result({ status: status({ pending: 6 }), halt }), 'jobs.yaml'))).toEqual([
      'darkroom run jobs.yaml',
      'darkroom report jobs.yaml',
    ]);
  });

  it('nothing after a stop that says what to do itself, an account problem, or an interrupt', () => {
    const config = { kind: 'config', message: 'no answer from the service', exitCode: 2, immediate: true } as Arg['halt'];
    expect(nextStepLines(result({ status: status({ pending: 8 }), halt: config }), 'jobs.yaml')).toEqual([]);
    const accountStop = { code: 24403 } as unknown as Arg['accountStop'];
    expect(nextStepLines(result({ status: status({ pending: 8 }), accountStop }), 'jobs.yaml')).toEqual([]);
    expect(nextStepLines(result({ status: status({ pending: 8 }), interrupted: true }), 'jobs.yaml')).toEqual([]);
  });

  it('nothing when there is nothing', () => {
    expect(nextStepLines(result({ status: status({ total: 0 }) }), 'jobs.yaml')).toEqual([]);
  });
});
