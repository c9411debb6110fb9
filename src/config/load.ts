import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { fingerprintKey } from '../api/key.js';
import { ConfigError } from './errors.js';
import { jobSchema, type JobFile, type StepConfig } from './schema.js';

export interface Config {
  /** Absolute path of the YAML file. */
  readonly file: string;
  readonly baseUrl: string | null;
  /** Names of the environment variables holding the keys, one lane each. */
  readonly keyEnvs: readonly string[];
  readonly timeoutMs: number;
  readonly limits: JobFile['limits'];
  readonly input: { readonly dir: string; readonly include: readonly string[]; readonly exclude: readonly string[] };
  readonly output: { readonly dir: string };
  readonly steps: readonly StepConfig[];
  readonly ledger: string;
  readonly onAmbiguous: JobFile['onAmbiguous'];
  readonly maxAttempts: number;
  readonly log: { readonly level: JobFile['log']['level']; readonly file: string };
}

export interface LoadOptions {
  /** `--base-url`; wins over DARKROOM_BASE_URL, which wins over service.baseUrl. */
  readonly baseUrl?: string | undefined;
  /** `--ledger`; wins over the YAML's `ledger`. */
  readonly ledger?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
}

export function loadConfig(file: string, opts: LoadOptions = {}): Config {
  const abs = path.resolve(file);
  const shown = file;
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(shown, '', code === 'ENOENT' ? 'file not found' : `cannot read (${code ?? String(err)})`);
  }
  const doc = parseDocument(text, { prettyErrors: false });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const where = e.linePos?.[0] ? `line ${e.linePos[0].line}` : '';
    throw new ConfigError(shown, where, `not valid YAML: ${e.message.split('\n')[0]}`);
  }
  const raw: unknown = doc.toJS() ?? {};
  const parsed = jobSchema.safeParse(raw);
  if (!parsed.success) throw fromZod(shown, raw, parsed.error);
  const job = parsed.data;
  const dir = path.dirname(abs);
  const env = opts.env ?? process.env;

  const baseUrl = opts.baseUrl ?? env.DARKROOM_BASE_URL ?? job.service.baseUrl ?? null;
  if (baseUrl !== null && !/^https?:\/\/[^/]+/.test(baseUrl)) {
    throw new ConfigError(shown, 'service.baseUrl', `expected an http(s) URL, got ${JSON.stringify(baseUrl)}`);
  }
  const keyEnvs = job.service.keys?.map((k) => k.apiKeyEnv) ?? [job.service.apiKeyEnv ?? 'DARKROOM_API_KEY'];

  const logFile = job.log.file ?? job.ledger.replace(/(\.db)?$/, '.log');
  const ledger = opts.ledger ? path.resolve(opts.ledger) : path.resolve(dir, job.ledger);
  return {
    file: abs,
    baseUrl: baseUrl?.replace(/\/+$/, '') ?? null,
    keyEnvs,
    timeoutMs: job.service.timeoutMs,
    limits: job.limits,
    input: { dir: path.resolve(dir, job.input.dir), include: job.input.include, exclude: job.input.exclude },
    output: { dir: path.resolve(dir, job.output.dir) },
    steps: job.steps,
    ledger,
    onAmbiguous: job.onAmbiguous,
    maxAttempts: job.maxAttempts,
    log: {
      level: job.log.level,
      file: opts.ledger && !job.log.file ? ledger.replace(/(\.db)?$/, '.log') : path.resolve(dir, logFile),
    },
  };
}

export interface ResolvedKey {
  readonly env: string;
  readonly key: string;
  readonly fingerprint: string;
}

/** The keys themselves, read only from the variables the config names (never from the file). */
export function resolveKeys(config: Config, env: NodeJS.ProcessEnv = process.env): ResolvedKey[] {
  return config.keyEnvs.map((name, i) => {
    const key = env[name]?.trim();
    if (!key) {
      const keyPath = config.keyEnvs.length > 1 ? `service.keys.${i}.apiKeyEnv` : 'service.apiKeyEnv';
      throw new ConfigError(path.basename(config.file), keyPath, `environment variable ${name} is not set; export it with your API key`);
    }
    return { env: name, key, fingerprint: fingerprintKey(key) };
  });
}

export function requireBaseUrl(config: Config): string {
  if (config.baseUrl === null) {
    throw new ConfigError(path.basename(config.file), 'service.baseUrl', 'not set; set it in the file, with DARKROOM_BASE_URL or with --base-url');
  }
  return config.baseUrl;
}

/** A run needs its input folder; `status` and `report` do not. */
export function requireInputDir(config: Config): void {
  let isDir = false;
  try {
    isDir = statSync(config.input.dir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) {
    throw new ConfigError(path.basename(config.file), 'input.dir', `expected an existing folder, got ${config.input.dir}`);
  }
}

function fromZod(file: string, raw: unknown, error: z.ZodError): ConfigError {
  const issue = error.issues[0]!;
  const keyPath = issue.path.map(String).join('.');
  let detail = issue.message.replace(/^Invalid (input|option): /, '');
  if (issue.code === 'unrecognized_keys') {
    const keys = (issue as { keys: string[] }).keys;
    const at = keyPath ? `${keyPath}.` : '';
    return new ConfigError(file, `${at}${keys[0]}`, 'unknown key; check its spelling against jobs.example.yaml');
  }
  const got = valueAt(raw, issue.path);
  if (got !== undefined && !/, got /.test(detail)) detail += `, got ${JSON.stringify(got)}`;
  if (got === undefined && issue.code === 'invalid_type') detail = `missing; ${detail.replace(/, received undefined$/, '')}`;
  return new ConfigError(file, keyPath, detail);
}

function valueAt(raw: unknown, p: readonly PropertyKey[]): unknown {
  let v: unknown = raw;
  for (const k of p) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}
