/**
 * The spec's endpoints other than the capabilities' (those are in capabilities.ts), as the
 * client names them in its call log. `{…}` parts are filled per call.
 */
export const ENDPOINTS = {
  credits: '/api/v1/credits',
  usage: '/api/v1/usage',
  upload: '/api/v1/image/upload',
  task: '/api/v1/tasks/{businessType}/{taskId}',
} as const;
