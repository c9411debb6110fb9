import { DarkroomError } from '../errors.js';

/**
 * The base URL is not the service, or does not answer (`darkroom plan`'s check,
 * serviceContact.ts): one line, exit 2 (src/cli/errors.ts). A module of its own, free of
 * imports but the error base, because the CLI's error table loads it at every start.
 */
export class ServiceUrlError extends DarkroomError {
  override readonly name = 'ServiceUrlError';
  constructor(message: string, code: 'NOT_THE_SERVICE' | 'SERVICE_UNREACHABLE') {
    super(code, message);
  }
}
