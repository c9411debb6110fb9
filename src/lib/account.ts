import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ApiClient, type CallRecord, type Transport } from '../api/index.js';
import { apiBaseUrl } from '../spec/endpoints.js';
import { fingerprintKey } from '../spec/key.js';
import { loadConfig, requireBaseUrl, resolveKeys, type Config, type ResolvedKey } from '../config/index.js';
import { clock } from '../clock.js';
import { Ledger, ProgressReader } from '../ledger/index.js';
import { KeyStore } from '../keystore/store.js';
import { KeyBudget } from '../scheduler/budget/keyBudget.js';
import { SPEC_LIMITS } from './status.js';
import { stateDirFrom } from './stateDir.js';
import { type Binding, ConfigError, humanWait } from '../errors.js';

/** The key(s), base URL and ledger an account command (credits, usage, plan's check) works with. */
export interface AccountTarget {
  readonly keys: readonly ResolvedKey[];
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** The job's ledger, or --ledger: where the call is recorded when it exists (L3); never created. */
  readonly ledgerFile: string | null;
  readonly config: Config | null;
}

export interface AccountArgs {
  readonly jobs?: string | undefined;
  readonly ledger?: string | undefined;
  readonly baseUrl?: string | undefined;
}

export interface AccountIo {
  readonly env: NodeJS.ProcessEnv;
  /** The in-process simulator's transport in tests; undici otherwise. */
  readonly transport?: Transport;
  /** Told once, with the line to show, when the key's windows have no room for the call yet. */
  readonly onWait?: (line: string) => void;
}

/**
 * An account command waits for room in the key's windows this long at most: a full minute
 * window empties within 61 s; longer means the hour window (or a long pause) binds, and
 * the operator is better told when to come back than left staring at a silent terminal.
 */
const ACCOUNT_MAX_WAIT_MS = 70_000;

/** The line shown while an account command waits for room. */
function waitLine(waitMs: number, binding: Binding): string {
  return binding === 'pause'
    ? `darkroom: waiting ${humanWait(waitMs)}: the service asked this key to pause`
    : `darkroom: waiting ${humanWait(waitMs)} for room in the key's ${binding === 'pace' ? 'hour' : binding} window (another darkroom process is using it)`;
}

/**
 * With a jobs file: its keys and base URL, exactly as `run` resolves them. Without one:
 * DARKROOM_API_KEY and --base-url or DARKROOM_BASE_URL.
 */
export function accountTarget(args: AccountArgs, env: NodeJS.ProcessEnv): AccountTarget {
  if (args.jobs) {
    const config = loadConfig(args.jobs, { baseUrl: args.baseUrl, ledger: args.ledger, env });
    return {
      keys: resolveKeys(config, env),
      baseUrl: requireBaseUrl(config),
      timeoutMs: config.timeoutMs,
      ledgerFile: config.ledger,
      config,
    };
  }
  const key = env.DARKROOM_API_KEY?.trim();
  if (!key)
    throw new ConfigError(
      'environment',
      'DARKROOM_API_KEY',
      'not set; export your API key in it, or name a jobs file whose service.apiKeyEnv names the variable',
    );
  const baseUrl = args.baseUrl ?? env.DARKROOM_BASE_URL;
  if (!baseUrl)
    throw new ConfigError('environment', 'DARKROOM_BASE_URL', 'not set; give --base-url, set DARKROOM_BASE_URL, or name a jobs file');
  if (!/^https?:\/\/[^/]+/.test(baseUrl))
    throw new ConfigError('--base-url', '', `expected an http(s) URL, got ${JSON.stringify(baseUrl)}`);
  return {
    keys: [{ env: 'DARKROOM_API_KEY', key, fingerprint: fingerprintKey(key) }],
    baseUrl: apiBaseUrl(baseUrl),
    timeoutMs: 30_000,
    ledgerFile: args.ledger ? path.resolve(args.ledger) : null,
    config: null,
  };
}

/**
 * One call with the key, made by `fn` with the client given. It is reserved first in the
 * key's machine-wide budget, like every call of a run: when another darkroom
 * process fills the key's windows, this waits for room, saying so once through
 * `io.onWait`, or refuses (KeyBusyError, exit 2) when that would take longer than
 * ACCOUNT_MAX_WAIT_MS. The call is also recorded in the ledger's call log when the ledger
 * exists (L3); no ledger is created for it.
 */
export async function withAccountClient<T>(
  target: AccountTarget,
  key: ResolvedKey,
  io: AccountIo,
  fn: (client: ApiClient) => Promise<T>,
): Promise<T> {
  const allowNetworkFs = target.config?.allowNetworkFs ?? false;
  const store = KeyStore.openFor(stateDirFrom(io.env), key.fingerprint, { allowNetworkFs });
  const ledger = target.ledgerFile && existsSync(target.ledgerFile) ? Ledger.open(target.ledgerFile, { allowNetworkFs }) : null;
  const budget = new KeyBudget(store, { owner: `a_${randomUUID()}`, limits: target.config?.limits ?? SPEC_LIMITS, taskBoundMs: () => 0 });
  const client = new ApiClient({
    baseUrl: target.baseUrl,
    apiKey: key.key,
    keyEnv: key.env,
    timeoutMs: target.timeoutMs,
    ...(io.transport ? { transport: io.transport } : {}),
    onCall: (rec: CallRecord) => ledger?.calls.record(key.fingerprint, rec),
  });
  try {
    const wait = { maxWaitMs: ACCOUNT_MAX_WAIT_MS, onWait: (ms: number, binding: Binding) => io.onWait?.(waitLine(ms, binding)) };
    return await budget.call('account', wait, (ticket) => fn(client.withTicket(ticket)));
  } finally {
    await client.close();
    ledger?.close();
    store.close();
  }
}

/** The ledger's call windows per key, read-only; null when there is no ledger (none is created). */
export function peekCallWindows(file: string): Record<string, { lastMinute: number; lastHour: number }> | null {
  if (!existsSync(file)) return null;
  const reader = ProgressReader.open(file);
  try {
    return reader.callWindows(clock.now());
  } finally {
    reader.close();
  }
}
