/**
 * What the CLI's own files need of its commands before any command runs: the names in its
 * help. Each command's function is loaded by its handler when it runs (main.ts), so
 * `darkroom --help` and `status` load none of the run's modules (undici, sharp, zod, yaml…).
 */
export { DEFAULT_LEDGER_FILE } from '../../config/ledgerPath.js';
export { PHOTOS_PER_PAGE } from '../../report/pageSize.js';
