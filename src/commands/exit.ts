/**
 * The exit codes of `darkroom` (docs/ARCHITECTURE.md § Command-line contract): what each
 * command function returns as `exitCode`, for the CLI to exit with.
 */
export const EXIT = { ok: 0, someFailed: 1, usage: 2, account: 3, limit: 4, interrupted: 130 } as const;
