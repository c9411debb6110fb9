import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { configErrorOf, jobsFileWriter } from '../helpers/config.js';

/* The keys of `run --follow`: input.settle, input.poll, input.watch. */

const write = jobsFileWriter();
const job = (input: string) => `input: { dir: ./photos${input} }\noutput: { dir: ./out }\nsteps: [{ capability: restore }]\n`;

describe('the job file’s keys of following', () => {
  it('has defaults of 10 s, 30 s and auto, and takes seconds or durations', () => {
    expect(loadConfig(write(job('')), { env: {} }).input).toMatchObject({ settleMs: 10_000, pollMs: 30_000, watch: 'auto' });
    const c = loadConfig(write(job(', settle: 2.5, poll: 1m30s, watch: poll')), { env: {} });
    expect(c.input).toMatchObject({ settleMs: 2_500, pollMs: 90_000, watch: 'poll' });
  });

  it('refuses what is not a span of time, or a way of watching', () => {
    expect(configErrorOf(() => loadConfig(write(job(', settle: 0')), { env: {} })).message).toMatch(/input\.settle/);
    expect(configErrorOf(() => loadConfig(write(job(', poll: ten')), { env: {} })).message).toMatch(/input\.poll.*(seconds|duration)/);
    expect(configErrorOf(() => loadConfig(write(job(', settle: 0s')), { env: {} })).message).toMatch(/input\.settle/);
    expect(configErrorOf(() => loadConfig(write(job(', watch: inotify')), { env: {} })).message).toMatch(/input\.watch/);
  });
});
