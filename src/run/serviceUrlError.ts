/**
 * The base URL is not the service, or does not answer (`darkroom plan`'s check,
 * serviceContact.ts): one line, exit 2 (src/cli/errors.ts). A module of its own, free of
 * imports, because the CLI's error table loads it at every start.
 */
export class ServiceUrlError extends Error {
  override readonly name = 'ServiceUrlError';
  constructor(
    message: string,
    readonly code: 'DARKROOM_NOT_THE_SERVICE' | 'DARKROOM_SERVICE_UNREACHABLE',
  ) {
    super(message);
  }
}
