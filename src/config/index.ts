export { ConfigError } from './errors.js';
export { loadConfig, resolveKeys, requireBaseUrl, requireInputDir, type Config, type LoadOptions, type ResolvedKey } from './load.js';
export type { StepConfig } from './schema.js';
