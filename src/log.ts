import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';

export type Logger = pino.Logger;

/** Field paths that could carry the key if a caller ever logged a request: censored anyway (L5). */
const REDACT = ['apiKey', 'key', 'headers["x-api-key"]', '*.headers["x-api-key"]', 'req.headers["x-api-key"]'];

/**
 * JSON lines to a file beside the ledger, created readable by its owner only. Writes are
 * synchronous so the last lines before a crash are on disk.
 */
export function fileLogger(file: string, level: string): Logger {
  mkdirSync(path.dirname(file), { recursive: true });
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
  const dest = pino.destination({ dest: file, sync: true, mkdir: true });
  return pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base: undefined }, dest);
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
