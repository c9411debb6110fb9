/**
 * Why a result was not fetched or written, with a stable code. `permanent`: trying again
 * in this run would meet the same (a file of the operator's at the output path, a name the
 * file system refuses); the photo stays paid-for and is tried again by the next run.
 */
export class DownloadError extends Error {
  override readonly name = 'DownloadError';
  constructor(
    readonly code: string,
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
  }
}
