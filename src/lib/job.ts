import path from 'node:path';
import { ConfigError, DarkroomError } from '../errors.js';
import { configFromObject, loadConfig, loadJobFile, type Config, type JobInput } from '../config/index.js';

/**
 * A job: what the jobs YAML holds (docs/guide/job-file.md), as an object. Keys with a
 * default may be left out. Relative paths (`input.dir`, `input.urls`, `output.dir`,
 * `ledger`, `log.file`) resolve against `cwd` of the call that takes it, or the process's
 * working folder; {@link loadJob} returns them absolute.
 */
export type Job = JobInput;

/** What every call that takes a job may also be given. */
export interface JobOptions {
  /** The ledger file, instead of the job's `ledger` (relative: against `cwd`). */
  readonly ledger?: string | undefined;
  /** The service's base URL, over `DARKROOM_BASE_URL` and the job's `service.baseUrl`. */
  readonly baseUrl?: string | undefined;
  /**
   * The API key, instead of the environment variable the job names (`service.apiKeyEnv`,
   * default `DARKROOM_API_KEY`). Only for a job with one key: a job with `service.keys`
   * reads each key from its own variable.
   */
  readonly apiKey?: string | undefined;
  /** What a job object's relative paths (and `ledger`) resolve against; default `process.cwd()`. A YAML file's paths resolve against its folder. */
  readonly cwd?: string | undefined;
}

/** The name a job object goes by in messages. */
const OBJECT_NAME = 'job';

/**
 * The job's config and the environment its keys are read from: `apiKey` stands in the
 * job's one key variable, so the process's environment is never changed.
 */
export function resolveJob(job: Job | string, opts: JobOptions = {}): { config: Config; env: NodeJS.ProcessEnv } {
  const base = { baseUrl: opts.baseUrl, ledger: opts.ledger, env: process.env, cwd: opts.cwd };
  const config = typeof job === 'string' ? loadConfig(job, base) : configFromObject(job, OBJECT_NAME, base);
  if (opts.apiKey === undefined) return { config, env: process.env };
  if (config.keyEnvs.length !== 1) {
    throw new ConfigError(
      path.basename(config.file),
      'service.keys',
      'apiKey names one key, and this job has several: set each in the variable its apiKeyEnv names',
    );
  }
  checkApiKey(opts.apiKey, config.keyEnvs[0]!);
  return { config, env: { ...process.env, [config.keyEnvs[0]!]: opts.apiKey } };
}

/**
 * The key came in code: a problem with it names the option, not an environment variable
 * the caller never used. Characters an HTTP header cannot carry would fail every call.
 */
function checkApiKey(key: unknown, env: string): void {
  if (typeof key !== 'string')
    throw new DarkroomError(
      'CONFIG',
      `the apiKey option must be a string (the API key), got ${typeof key}; or leave it out to read ${env}`,
    );
  if (key.trim() === '')
    throw new DarkroomError('CONFIG', `the apiKey option is empty: pass the API key, or leave the option out to read ${env}`);
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(key.trim()))
    throw new DarkroomError(
      'CONFIG',
      'the apiKey option holds a control character (a line break?), which no API key has: pass the key alone',
    );
}

/**
 * Read and check a jobs YAML file. Its relative paths are returned absolute (resolved
 * against the file's folder), so the job runs the same from any working folder.
 *
 * @throws {@link DarkroomError} with code `CONFIG` naming the file, the key and what was expected.
 */
export async function loadJob(file: string): Promise<Job> {
  const { job, config } = loadJobFile(file);
  const abs = (p: string) => path.resolve(path.dirname(config.file), p);
  return {
    ...job,
    input: {
      ...job.input,
      ...(job.input.dir !== undefined ? { dir: abs(job.input.dir) } : {}),
      ...(job.input.urls !== undefined ? { urls: abs(job.input.urls) } : {}),
    },
    output: { ...job.output, dir: config.output.dir },
    ledger: config.allowNetworkFs ? { path: config.ledger, allowNetworkFs: true } : config.ledger,
    log: { ...job.log, file: config.log.file },
  };
}
