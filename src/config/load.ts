import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import { CAPABILITIES, CAPABILITY_NAMES, type Capability } from '../spec/capabilities.js';
import { apiBaseUrl } from '../spec/endpoints.js';
import { fingerprintKey, looksLikeKey } from '../spec/key.js';
import { resolveLedgerPath } from './ledgerPath.js';
import { DEFAULT_INCLUDE, DEFAULT_INCLUDE_TRANSCODE, jobSchema, KEY_ENV_EXPECTED, type JobFile, type StepConfig } from './schema.js';
import { ConfigError } from '../errors.js';
import { closestWord } from '../display.js';

export interface Config {
  /** Absolute path of the YAML file. */
  readonly file: string;
  readonly baseUrl: string | null;
  /** The service's name as outputs state it (service.name, else the base URL's host; null with neither). */
  readonly serviceName: string | null;
  /** Names of the environment variables holding the keys, one lane each. */
  readonly keyEnvs: readonly string[];
  readonly timeoutMs: number;
  readonly limits: JobFile['limits'];
  readonly input: InputConfig;
  readonly output: OutputConfig;
  readonly steps: readonly StepConfig[];
  /** businessType used to poll each capability's tasks when the create response names none. */
  readonly businessTypes: Readonly<Record<Capability, string>>;
  readonly ledger: string;
  /** ledger.allowNetworkFs: the ledger (and the keys' stores) may be on a network file system (rollback journal, not WAL). */
  readonly allowNetworkFs: boolean;
  readonly onAmbiguous: JobFile['onAmbiguous'];
  readonly maxAttempts: number;
  /** Credits per image by capability, where the job sets them (plan only). */
  readonly credits: Readonly<Partial<Record<string, number>>>;
  readonly log: { readonly level: JobFile['log']['level']; readonly file: string };
}

export interface InputConfig {
  /** Absolute folder of photos; null for a job of URL inputs only. */
  readonly dir: string | null;
  /** Absolute path of the URL list (input.urls), or null. */
  readonly urls: string | null;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
  readonly transcode: 'auto' | 'off';
  readonly maxPixels: number | null;
  /** Include files and folders whose names start with a dot (input.hidden). */
  readonly hidden: boolean;
  /** `--follow`: how long a new file's size and mtime must stay the same before it is taken (input.settle), ms. */
  readonly settleMs: number;
  /** `--follow`: how often a folder watched by scanning is scanned (input.poll), ms. */
  readonly pollMs: number;
  /** `--follow`: events, scanning, or by the file system (input.watch). */
  readonly watch: 'auto' | 'events' | 'poll';
}

export interface OutputConfig {
  readonly dir: string;
  readonly layout: 'mirror' | 'flat';
  readonly pattern: string;
  readonly keepIntermediates: boolean;
  /** The input's metadata carried to each output (output.metadata). */
  readonly metadata: 'all' | 'basic' | 'none';
  /** Which sidecars go beside each output (output.sidecar; `true` is `json`). */
  readonly sidecar: Sidecars;
}

export interface Sidecars {
  /** <output>.json: source hash, steps, task ids, timings. */
  readonly json: boolean;
  /** <output>.xmp: the input's metadata and the provenance, as XMP. */
  readonly xmp: boolean;
}

/** output.sidecar as written → which sidecars. */
function sidecarsOf(v: boolean | 'json' | 'xmp' | 'both'): Sidecars {
  return { json: v === true || v === 'json' || v === 'both', xmp: v === 'xmp' || v === 'both' };
}

export interface LoadOptions {
  /** `--base-url`; wins over DARKROOM_BASE_URL, which wins over service.baseUrl. */
  readonly baseUrl?: string | undefined;
  /** `--ledger`; wins over the YAML's `ledger`. */
  readonly ledger?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
  /** What relative names (the file, `--ledger`, a job object's paths) resolve against; default the process's working folder. */
  readonly cwd?: string | undefined;
}

/** The jobs YAML at `file`, read, checked and resolved against its folder. */
export function loadConfig(file: string, opts: LoadOptions = {}): Config {
  return loadJobFile(file, opts).config;
}

/** The jobs YAML at `file`: as checked (defaults filled in, paths as written) and as resolved. */
export function loadJobFile(file: string, opts: LoadOptions = {}): { job: JobFile; config: Config } {
  const abs = path.resolve(opts.cwd ?? process.cwd(), file);
  const shown = file;
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(shown, '', code === 'ENOENT' ? 'file not found' : `cannot read (${code ?? String(err)})`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, lineCounter: lines });
  if (doc.errors.length > 0) {
    // Where, by line and column; never the line itself (it may hold a key pasted in the wrong place).
    const e = doc.errors[0]!;
    const at = lines.linePos(e.pos[0]);
    throw new ConfigError(shown, `line ${at.line}, column ${at.col}`, `not valid YAML: ${e.message.split('\n')[0]}`);
  }
  return configFrom(doc.toJS() ?? {}, { file: abs, shown, dir: path.dirname(abs) }, opts);
}

/**
 * A job given as an object (the library's `run(job)`): checked as a jobs file is, its
 * relative paths resolved against `opts.cwd` (default: the process's). `file` names it
 * in messages and in the live display's title.
 */
export function configFromObject(raw: unknown, file: string, opts: LoadOptions = {}): Config {
  const dir = path.resolve(opts.cwd ?? process.cwd());
  return configFrom(raw, { file: path.resolve(dir, file), shown: file, dir }, opts).config;
}

/** Where a job's text came from: its absolute name, the name its messages give, the folder its paths are relative to. */
interface JobSource {
  readonly file: string;
  readonly shown: string;
  readonly dir: string;
}

function configFrom(raw: unknown, src: JobSource, opts: LoadOptions): { job: JobFile; config: Config } {
  const { shown, dir } = src;
  const abs = src.file;
  const parsed = jobSchema.safeParse(raw);
  if (!parsed.success) throw fromZod(shown, raw, parsed.error);
  const job = parsed.data;
  const env = opts.env ?? process.env;

  const baseUrl = opts.baseUrl ?? env.DARKROOM_BASE_URL ?? job.service.baseUrl ?? null;
  if (baseUrl !== null && !/^https?:\/\/[^/]+/.test(baseUrl)) {
    throw new ConfigError(shown, 'service.baseUrl', `expected an http(s) URL, got ${shownValue(baseUrl)}`);
  }
  const keyEnvs = job.service.keys?.map((k) => k.apiKeyEnv) ?? [job.service.apiKeyEnv ?? 'DARKROOM_API_KEY'];

  // Outputs would be read back as inputs on the next run (discover leaves out an output
  // folder inside the input folder, which cannot be done when they are the same).
  if (job.input.dir !== undefined && path.resolve(dir, job.input.dir) === path.resolve(dir, job.output.dir)) {
    throw new ConfigError(
      shown,
      'output.dir',
      `must not be the same folder as input.dir (${job.input.dir}): outputs would be read back as inputs; name another folder`,
    );
  }
  const ledgerPath = typeof job.ledger === 'string' ? job.ledger : job.ledger.path;
  const logFile = job.log.file ?? ledgerPath.replace(/(\.db)?$/, '.log');
  const ledger = opts.ledger ? resolveLedgerPath(opts.cwd ?? process.cwd(), opts.ledger) : resolveLedgerPath(dir, ledgerPath);
  const config: Config = {
    file: abs,
    baseUrl: baseUrl === null ? null : apiBaseUrl(baseUrl),
    serviceName: job.service.name ?? hostOf(baseUrl),
    keyEnvs,
    timeoutMs: job.service.timeoutMs,
    limits: job.limits,
    input: {
      dir: job.input.dir === undefined ? null : path.resolve(dir, job.input.dir),
      urls: job.input.urls === undefined ? null : path.resolve(dir, job.input.urls),
      include: job.input.include ?? (job.input.transcode === 'auto' ? DEFAULT_INCLUDE_TRANSCODE : DEFAULT_INCLUDE),
      exclude: job.input.exclude,
      transcode: job.input.transcode,
      maxPixels: job.input.maxPixels ?? null,
      hidden: job.input.hidden,
      settleMs: Math.round(job.input.settle * 1000),
      pollMs: Math.round(job.input.poll * 1000),
      watch: job.input.watch,
    },
    output: {
      dir: path.resolve(dir, job.output.dir),
      layout: job.output.layout,
      pattern: job.output.pattern,
      keepIntermediates: job.output.keepIntermediates,
      metadata: job.output.metadata,
      sidecar: sidecarsOf(job.output.sidecar),
    },
    steps: job.steps,
    businessTypes: resolveBusinessTypes(job.service.businessTypes ?? {}),
    ledger,
    allowNetworkFs: typeof job.ledger === 'object' && job.ledger.allowNetworkFs,
    onAmbiguous: job.onAmbiguous,
    maxAttempts: job.maxAttempts,
    credits: job.credits ?? {},
    log: {
      level: job.log.level,
      file: opts.ledger && !job.log.file ? ledger.replace(/(\.db)?$/, '.log') : path.resolve(dir, logFile),
    },
  };
  return { job, config };
}

function hostOf(url: string | null): string | null {
  if (url === null) return null;
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
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
      const at = config.keyEnvs.length > 1 ? ['service', 'keys', i, 'apiKeyEnv'] : ['service', 'apiKeyEnv'];
      throw new ConfigError(
        path.basename(config.file),
        at.join('.'),
        `environment variable ${name} is not set; export it with your API key`,
        shownKeyPath(at),
      );
    }
    return { env: name, key, fingerprint: fingerprintKey(key) };
  });
}

export function requireBaseUrl(config: Config): string {
  if (config.baseUrl === null) {
    throw new ConfigError(
      path.basename(config.file),
      'service.baseUrl',
      'not set; set it in the file, with DARKROOM_BASE_URL or with --base-url',
    );
  }
  return config.baseUrl;
}

/**
 * A run needs its input folder and URL list; `status` and `report` do not. The list's
 * lines are checked when the run reads them (src/inputs/urls.ts), still before any call.
 */
export function requireInputDir(config: Config): void {
  const shown = path.basename(config.file);
  if (config.input.dir !== null) {
    let isDir = false;
    try {
      isDir = statSync(config.input.dir).isDirectory();
    } catch {
      isDir = false;
    }
    if (!isDir) throw new ConfigError(shown, 'input.dir', `expected an existing folder, got ${config.input.dir}`);
  }
  if (config.input.urls !== null) {
    let isFile = false;
    try {
      isFile = statSync(config.input.urls).isFile();
    } catch {
      isFile = false;
    }
    if (!isFile) throw new ConfigError(shown, 'input.urls', `expected an existing file of image URLs, got ${config.input.urls}`);
  }
}

function resolveBusinessTypes(overrides: Partial<Record<Capability, string | undefined>>): Record<Capability, string> {
  const out = {} as Record<Capability, string>;
  for (const c of CAPABILITY_NAMES) out[c] = overrides[c] ?? CAPABILITIES[c].businessType;
  return out;
}

function fromZod(file: string, raw: unknown, error: z.ZodError): ConfigError {
  // An unknown key first: a misspelt one is also why another is missing (stpes: → steps: missing).
  const issue = error.issues.find((i) => i.code === 'unrecognized_keys') ?? error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const key = (issue as { keys: string[] }).keys[0]!;
    const at = [...issue.path, key];
    const near = closestWord(key, keysAt(jobSchema, issue.path));
    const what = near ? `did you mean ${near}?` : 'check its spelling against docs/guide/job-file.md';
    return new ConfigError(file, at.map(String).join('.'), `unknown key; ${what}`, shownKeyPath(at));
  }
  const keyPath = issue.path.map(String).join('.');
  const shown = shownKeyPath(issue.path);
  let detail = issue.message.replace(/^Invalid (input|option): /, '');
  const got = valueAt(raw, issue.path);
  if (issue.path.at(-1) === 'apiKeyEnv' && typeof got === 'string') return keyEnvError(file, keyPath, got, shown);
  if (got !== undefined && !/, got /.test(detail)) detail += `, got ${shownValue(got)}`;
  if (got === undefined && issue.code === 'invalid_type') detail = `missing; ${detail.replace(/, received undefined$/, '')}`;
  return new ConfigError(file, keyPath, detail, shown);
}

/**
 * A key's path as the rest of darkroom says it: steps counted from 1, as every line about a
 * step does ("step 2: resolution" for steps.1.resolution), and the items of another list so
 * too ("service.keys item 2: apiKeyEnv").
 */
function shownKeyPath(p: readonly PropertyKey[]): string {
  let out = '';
  for (const [i, k] of p.entries()) {
    if (typeof k === 'number') out = p[i - 1] === 'steps' && i === 1 ? `step ${k + 1}:` : `${out} item ${k + 1}:`;
    else out = out === '' ? String(k) : out.endsWith(':') ? `${out} ${String(k)}` : `${out}.${String(k)}`;
  }
  return out.replace(/:$/, '');
}

/** The keys the schema knows where `p` leads (an object's, a list's items', a union's objects'), for "did you mean". */
function keysAt(schema: z.ZodType, p: readonly PropertyKey[]): string[] {
  type Def = { type: string; innerType?: Node; in?: Node; shape?: Record<string, Node>; element?: Node; options?: Node[] };
  type Node = { _zod?: { def: Def } };
  const bare = (n: Node | undefined): Node | undefined => {
    let d = n?._zod?.def;
    while (d && (d.innerType || (d.type === 'pipe' && d.in))) {
      n = d.innerType ?? d.in;
      d = n?._zod?.def;
    }
    return n;
  };
  const objects = (n: Node | undefined): Node[] => {
    const d = bare(n)?._zod?.def;
    if (d?.type === 'object') return [bare(n)!];
    return d?.type === 'union' ? (d.options ?? []).flatMap(objects) : [];
  };
  let here: Node[] = [schema as unknown as Node];
  for (const k of p) {
    here = here.flatMap((n) => {
      const d = bare(n)?._zod?.def;
      if (typeof k === 'number') return d?.type === 'array' && d.element ? [d.element] : [];
      return objects(n).flatMap((o) => {
        const child = o._zod!.def.shape?.[String(k)];
        return child ? [child] : [];
      });
    });
  }
  return [...new Set(here.flatMap(objects).flatMap((o) => Object.keys(o._zod!.def.shape ?? {})))];
}

/**
 * A wrong `apiKeyEnv`, said without its value: the key itself is what users paste there most
 * (L5: never echoed, into a terminal or a CI log).
 */
function keyEnvError(file: string, keyPath: string, got: string, shown: string): ConfigError {
  const what = looksLikeKey(got) ? 'this value looks like a key' : 'this value is not a variable name';
  return new ConfigError(
    file,
    keyPath,
    `${KEY_ENV_EXPECTED}; ${what} and is not shown. Put the key in a variable (export DARKROOM_API_KEY=…) and name that variable here`,
    shown,
  );
}

/** A value as an error line shows it: JSON, with any string that looks like a key left out. */
function shownValue(v: unknown): string {
  return JSON.stringify(v, (_, x: unknown) => (typeof x === 'string' && looksLikeKey(x) ? '(a value like a key, not shown)' : x));
}

function valueAt(raw: unknown, p: readonly PropertyKey[]): unknown {
  let v: unknown = raw;
  for (const k of p) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}
