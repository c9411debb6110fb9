import { toDarkroomError } from '../errors.js';

/** An operator-facing error: one line that says what happened and what to do, and its exit code (src/errors.ts). */
export function describeError(err: unknown): { exitCode: number; line: string } {
  const d = toDarkroomError(err);
  if (d.code === 'USAGE') return { exitCode: d.exitCode, line: `darkroom: ${d.message} (see darkroom --help)` };
  // A file that could not be written: the output folder (an OutputWriteError), or a path a system call named.
  if (d.code === 'OUTPUT_WRITE')
    return {
      exitCode: d.exitCode,
      line: `darkroom: ${d.message}; free space or fix ${d === err ? 'the folder' : 'permissions'}, then run again`,
    };
  return { exitCode: d.exitCode, line: `darkroom: ${d.message}` };
}
