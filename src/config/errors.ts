/** A config problem, reported as one line naming the file, the key path and what was expected. Exit code 2. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'DARKROOM_CONFIG';
  readonly exitCode = 2;
  constructor(
    readonly file: string,
    readonly keyPath: string,
    readonly detail: string,
  ) {
    super(keyPath ? `${file}: ${keyPath}: ${detail}` : `${file}: ${detail}`);
  }
}
