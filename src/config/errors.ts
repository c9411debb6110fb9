import { DarkroomError } from '../errors.js';

/** A config problem, reported as one line naming the file, the key path and what was expected. Exit code 2. */
export class ConfigError extends DarkroomError {
  override readonly name = 'ConfigError';
  constructor(
    readonly file: string,
    readonly keyPath: string,
    readonly detail: string,
  ) {
    super('CONFIG', keyPath ? `${file}: ${keyPath}: ${detail}` : `${file}: ${detail}`);
  }
}
