export { DEFAULT_LEDGER_FILE, resolveLedgerPath } from './ledgerPath.js';
export {
  configFromObject,
  loadConfig,
  loadJobFile,
  resolveKeys,
  requireBaseUrl,
  requireInputDir,
  type Config,
  type InputConfig,
  type OutputConfig,
  type Sidecars,
  type LoadOptions,
  type ResolvedKey,
} from './load.js';
export { type JobFile, type JobInput, type StepConfig, DEFAULT_MAX_INPUT_PIXELS } from './schema.js';
export { checkPattern, fillPattern, type Placeholder } from './pattern.js';
export { withMode } from './steps.js';
