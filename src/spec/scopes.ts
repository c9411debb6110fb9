/** The scopes a 429 names in its RateLimit-Scope header (the service's spec, § Rate limits): read by the client, answered by the simulator. */
export const RATE_LIMIT_SCOPES = ['api_key_minute', 'api_key_hour', 'global_minute', 'global_hour', 'api_key_active_tasks'] as const;
export type KnownRateLimitScope = (typeof RATE_LIMIT_SCOPES)[number];
