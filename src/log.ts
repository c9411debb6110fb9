import { chmodSync, closeSync, openSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { shownText } from './display.js';
import { redact } from './spec/key.js';
import { clock } from './clock.js';
import { makeDirs } from './fsdirs.js';

export type Logger = pino.Logger;

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** Field paths that could carry the key if a caller ever logged a request: censored anyway (L5). */
const REDACT = [
  'apiKey',
  'key',
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
  '*.*.headers["x-api-key"]',
  'req.headers["x-api-key"]',
  'err.headers["x-api-key"]',
  'request.headers["x-api-key"]',
];

export interface LoggerOptions {
  /**
   * The keys themselves. Every line is searched for them and each occurrence replaced by
   * its mask before it is written, whatever field or error text it hid in (L5): the path
   * list above only covers fields we thought of.
   */
  readonly secrets?: readonly string[];
  /** Short human lines for warnings and errors (stderr, or above the live display). */
  readonly human?: (line: string) => void;
  /** Where the human lines say the details are. */
  readonly humanHint?: string;
  /** Most human lines in any minute; the rest are counted and left to the log file. Default 10. */
  readonly humanPerMinute?: number;
  /** The input path of an item (the `item` field of a record), so a human line names the photo. */
  readonly itemName?: (id: number) => string | undefined;
}

const LEVEL_VALUE: Record<Exclude<LogLevel, 'silent'>, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50 };

/**
 * JSON lines to a file beside the ledger, created readable by its owner only. Writes are
 * synchronous so the last lines before a crash are on disk.
 *
 * Every API call is logged at info (method, path, HTTP status, code, requestId, sent
 * X-Request-Id, duration, key fingerprint): the runner emits them at debug as `call`, and
 * the hook below lifts exactly those to info, so `log.level: info` (the default) keeps
 * them and `warn` drops them.
 */
export function fileLogger(file: string, level: string, opts: LoggerOptions = {}): Logger {
  makeDirs(path.dirname(file));
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
  const secrets = (opts.secrets ?? []).filter((s) => s.length >= 4);
  const fileLevel = (level in LEVEL_VALUE ? level : level === 'silent' ? 'silent' : 'info') as LogLevel;

  const streams: pino.StreamEntry[] = [];
  let dest: ReturnType<typeof pino.destination> | undefined;
  if (fileLevel !== 'silent') {
    const d = (dest = pino.destination({ dest: file, sync: true }));
    streams.push({ level: fileLevel, stream: { write: (s: string) => d.write(redact(s, secrets)) } });
  }
  if (opts.human) streams.push({ level: 'warn', stream: { write: humanWriter(opts, secrets) } });
  if (streams.length === 0) return silentLogger();

  const lowest = Math.min(...streams.map((s) => LEVEL_VALUE[s.level as keyof typeof LEVEL_VALUE]));
  // One below info, so the runner's debug `call` lines reach the hook that lifts them.
  const loggerValue = Math.min(lowest, LEVEL_VALUE.debug);
  const loggerLevel = (Object.entries(LEVEL_VALUE).find(([, v]) => v === loggerValue)?.[0] ?? 'debug') as LogLevel;
  const debugKept = fileLevel === 'trace' || fileLevel === 'debug';

  const logger = pino(
    {
      level: loggerLevel,
      redact: { paths: REDACT, censor: '[redacted]' },
      base: undefined,
      hooks: {
        logMethod(args, method, lvl) {
          if (lvl === LEVEL_VALUE.debug && args[1] === 'call') {
            // `key` is censored by path; the runner puts the key's fingerprint there, which is
            // worth keeping under a name of its own (several keys: which one made the call).
            const rec = { ...(args[0] as Record<string, unknown>) };
            if (typeof rec.key === 'string' && /^k_[0-9a-f]{12}$/.test(rec.key)) {
              rec.keyFp = rec.key;
              delete rec.key;
            }
            return this.info(rec, 'call');
          }
          if (lvl === LEVEL_VALUE.debug && !debugKept) return undefined;
          return method.apply(this, args);
        },
      },
    },
    pino.multistream(streams),
  );
  if (dest) openFiles.set(logger, dest);
  return logger;
}

/** Each file logger's open file, closed by closeLogger. */
const openFiles = new WeakMap<Logger, { end(): void }>();

/**
 * Close a fileLogger's file: a program that runs many jobs in one process (the library)
 * would otherwise keep a descriptor open per run. Writes are synchronous, so nothing is
 * lost; a logger not made by fileLogger is left alone.
 */
export function closeLogger(log: Logger): void {
  openFiles.get(log)?.end();
  openFiles.delete(log);
}

/**
 * Fields a record carries when its fact reaches the operator as another line (a run's stop:
 * the command's one `stopped: …` line says it): the log file keeps it, stderr does not repeat it.
 */
export const LOG_ONLY = { logOnly: true } as const;

/** One JSON line → `darkroom: warning: create held: outcome unknown (item 12, requestId …)`, rate-limited. */
function humanWriter(opts: LoggerOptions, secrets: readonly string[]): (s: string) => void {
  const limit = opts.humanPerMinute ?? 10;
  let windowStart = -Infinity;
  let shown = 0;
  let dropped = 0;
  return (s: string) => {
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(s) as Record<string, unknown>;
    } catch {
      return;
    }
    // Said to the operator in another line (a run's stop, which the command prints as `stopped: …`): the log file's alone.
    if (rec.logOnly === true) return;
    const now = clock.now();
    if (now - windowStart >= 60_000) {
      if (dropped > 0)
        opts.human!(`darkroom: ${dropped} more warning(s) in the last minute${opts.humanHint ? `; see ${opts.humanHint}` : ''}`);
      windowStart = now;
      shown = 0;
      dropped = 0;
    }
    if (shown >= limit) {
      dropped++;
      return;
    }
    shown++;
    opts.human!(redact(humanLine(rec, itemNameOf(opts, rec.item)), secrets));
  };
}

function itemNameOf(opts: LoggerOptions, item: unknown): string | undefined {
  if (typeof item !== 'number' || !opts.itemName) return undefined;
  try {
    return opts.itemName(item);
  } catch {
    // The ledger busy past its timeout: the line says "item N" rather than nothing.
    return undefined;
  }
}

/**
 * `darkroom: warning: a/b.jpg: create held: outcome unknown (X-Request-Id dr-…)`: the photo
 * by its input path when `name` is known (else `item N`), whole; the terminal or the live
 * display wraps it, nothing cuts it.
 */
function humanLine(rec: Record<string, unknown>, name?: string): string {
  const lvl = typeof rec.level === 'number' && rec.level >= 50 ? 'error' : 'warning';
  // One line, whatever the message holds: names and the service's words come from outside (src/display.ts).
  const msg = shownText(String(rec.msg ?? ''));
  const ctx: string[] = [];
  // A fact the message says already (an API error's own "HTTP 401, code -1, requestId …") is not said twice.
  const add = (label: string, v: unknown) => {
    const fact = v === undefined || v === null || v === '' ? '' : `${label} ${shownText(String(v))}`;
    if (fact && !msg.includes(fact)) ctx.push(fact);
  };
  if (name === undefined) add('item', rec.item);
  add('HTTP', rec.httpStatus);
  add('code', rec.businessCode ?? rec.code);
  add('requestId', rec.requestId);
  add('X-Request-Id', rec.sentRequestId);
  // A message that names the photo already (`a/b.jpg skipped: …`) does not get it twice.
  const shownName = name === undefined ? undefined : shownText(name);
  const who = shownName !== undefined && !msg.includes(shownName) ? `${shownName}: ` : '';
  return `darkroom: ${lvl}: ${who}${msg}${ctx.length ? ` (${ctx.join(', ')})` : ''}`;
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
