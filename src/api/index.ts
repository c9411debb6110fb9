export { ApiClient } from './client.js';
export { ENDPOINTS } from '../spec/endpoints.js';
export type { ApiClientOptions, CallOpts, CallRecord, CallTicket, CreateBody } from './calls.js';
export { ApiError, isApiError } from './errors.js';
export type { ErrorKind } from './errors.js';
export { classify, ERROR_TABLE, serviceAnswer } from './classify.js';
export type { Classification, ErrorTableEntry, ServiceAnswer } from './classify.js';
export { probeService } from './probe.js';
export type { ProbeResult } from './probe.js';
export {
  getHeader,
  parseHttpDate,
  parseRateLimit,
  parseRateLimitReset,
  parseRetryAfter,
  rateLimitFrom,
  isKnownScope,
} from './headers.js';
export type { RateLimitInfo, RateLimitScope } from './headers.js';
export { newRequestId, isValidRequestId } from './requestId.js';
export { isTerminalStatus, TASK_STATUSES } from './shapes.js';
export type { CreateResult, CreatedTask, Credits, TaskInfo, TaskStatus, UploadResult, Usage } from './shapes.js';
export { undiciTransport } from './transport.js';
export type { UndiciTransportOptions } from './transport.js';
export { TransportError } from '../spec/wire.js';
export type { Transport, WireRequest, WireResponse } from '../spec/wire.js';
export { CAPABILITIES, CAPABILITY_NAMES, MODES, RESOLUTIONS, isCapability } from '../spec/capabilities.js';
export type { Capability, CapabilityInfo, Mode, Resolution } from '../spec/capabilities.js';
export { fingerprintKey, maskKey, redact } from '../spec/key.js';
