import { type ApiError, EXIT } from '../errors.js';
import { LOG_ONLY } from '../log.js';
import { haltRun, type StageContext } from './context.js';

/**
 * A config problem every call would meet (the base URL redirects, api/classify.ts 'stop-config')
 * stops the run at once with exit 2: no call of any kind after it, and no photo failed for
 * it. The stage that met it has already put its item back where it was (a redirect is a
 * definite "not done"). The line names the redirect's target, never the key.
 */
export function stopForConfig(ctx: Pick<StageContext, 'run' | 'log'>, err: ApiError): void {
  haltRun(ctx.run, { kind: 'config', code: 'NOT_THE_SERVICE', immediate: true, exitCode: EXIT.usage, message: err.message });
  ctx.log.error(
    { code: err.answer, httpStatus: err.httpStatus, endpoint: err.endpoint, requestId: err.requestId, ...LOG_ONLY },
    err.message,
  );
}
