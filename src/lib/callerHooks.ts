import { DarkroomError } from '../errors.js';
import type { Logger } from '../log.js';
import type { RunEvent } from '../run/events.js';

/**
 * The caller's code darkroom calls during a run (`onEvent`, the logger), kept from ever
 * escaping into the run: the stages call these from promise callbacks and timers, where a
 * throw would become the host process's unhandled rejection or uncaught exception.
 */

/** An option the library takes from code is checked at the door: the wrong type is `CONFIG`, never a crash mid-run. */
export function checkRunHooks(opts: { readonly signal?: unknown; readonly onEvent?: unknown; readonly logger?: unknown }): void {
  if (opts.signal !== undefined && !(opts.signal instanceof AbortSignal)) {
    throw new DarkroomError('CONFIG', 'the signal option must be an AbortSignal (from an AbortController), or left out');
  }
  if (opts.onEvent !== undefined && typeof opts.onEvent !== 'function') {
    throw new DarkroomError('CONFIG', 'the onEvent option must be a function taking each event, or left out');
  }
  const log = opts.logger as { child?: unknown; info?: unknown } | null | undefined;
  if (log !== undefined && (typeof log?.child !== 'function' || typeof log.info !== 'function')) {
    throw new DarkroomError('CONFIG', 'the logger option must be a pino logger, or left out');
  }
}

/**
 * The caller's `onEvent`, made safe to call from anywhere in the run: its first throw is
 * kept, the run is told to stop (`stop`, as an abort), and no further event reaches the
 * handler. `thrown` is what it threw and on which event, once it did.
 */
export class GuardedHandler {
  private failure: { readonly err: unknown; readonly on: RunEvent['type'] } | undefined;

  constructor(
    private readonly handler: ((e: RunEvent) => void) | undefined,
    private readonly stop: () => void,
  ) {}

  readonly emit = (e: RunEvent): void => {
    if (this.failure || !this.handler) return;
    try {
      this.handler(e);
    } catch (err) {
      this.failure = { err, on: e.type };
      this.stop();
    }
  };

  get thrown(): { readonly err: unknown; readonly on: RunEvent['type'] } | undefined {
    return this.failure;
  }
}

/** The pino methods darkroom calls: each swallows what the caller's logger throws. */
const LOG_METHODS = new Set<PropertyKey>(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent', 'flush']);

/**
 * The caller's pino logger, with each logging call kept from throwing (a destination that
 * throws, a hook with a bug): a line it cannot take is lost rather than breaking the run
 * half-way through a ledger write. Children are wrapped alike; everything else (level,
 * bindings) reads through.
 */
export function safeLogger(log: Logger): Logger {
  return new Proxy(log, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (prop === 'child') return (...args: unknown[]) => safeLogger(fn.apply(target, args) as Logger);
      if (!LOG_METHODS.has(prop)) return fn.bind(target);
      return (...args: unknown[]) => {
        try {
          return fn.apply(target, args);
        } catch {
          return undefined;
        }
      };
    },
  });
}
