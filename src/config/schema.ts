import { z } from 'zod';
import { CAPABILITY_NAMES, MODES, RESOLUTIONS } from '../api/capabilities.js';

/**
 * The jobs YAML (DESIGN.md § Command-line contract). Every default is written here, once.
 * Unknown keys are refused so that a typo ("stpes:") is an error, not a silently
 * ignored setting.
 */

const positiveInt = z.number().int().positive();

const keyRef = z.strictObject({
  apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'),
});

export const serviceSchema = z
  .strictObject({
    baseUrl: z.url({ protocol: /^https?$/ }).optional(),
    apiKeyEnv: keyRef.shape.apiKeyEnv.optional(),
    keys: z.array(keyRef).min(1).optional(),
    /** Per-call timeout of API calls, ms. */
    timeoutMs: positiveInt.default(30_000),
  })
  .refine((s) => !(s.apiKeyEnv && s.keys), { message: 'either apiKeyEnv or keys, not both' });

export const limitsSchema = z.strictObject({
  callsPerMinute: positiveInt.default(100),
  callsPerHour: positiveInt.default(1000),
  activeTasks: positiveInt.default(3),
  /** Spec gap: the service's upload size limit is not shown; 20 MiB is our ceiling. */
  maxUploadBytes: positiveInt.default(20 * 1024 * 1024),
  /** Spec: "a client caps its total polling time"; the value is ours. */
  pollCapMinutes: z.number().positive().default(30),
  /** Parallel result downloads (not API calls, so not rate limited). */
  downloads: positiveInt.default(4),
});

export const stepSchema = z
  .strictObject({
    capability: z.enum(CAPABILITY_NAMES),
    mode: z.enum(MODES).optional(),
    resolution: z.enum(RESOLUTIONS).optional(),
    style: z.string().min(1).optional(),
    prompt: z.string().optional(),
    negativePrompt: z.string().optional(),
  })
  .superRefine((step, ctx) => {
    const modeOk = ['enhance', 'unblur', 'upscale'].includes(step.capability);
    if (step.mode !== undefined && !modeOk) {
      ctx.addIssue({ code: 'custom', path: ['mode'], message: `${step.capability} accepts no mode (only enhance, unblur, upscale do)` });
    }
    if (step.resolution !== undefined && step.capability !== 'upscale') {
      ctx.addIssue({ code: 'custom', path: ['resolution'], message: 'only upscale accepts a resolution' });
    }
    if (step.capability === 'image2image' && step.style === undefined) {
      ctx.addIssue({ code: 'custom', path: ['style'], message: 'image2image requires a style' });
    }
    if (step.capability !== 'image2image') {
      for (const k of ['style', 'prompt', 'negativePrompt'] as const) {
        if (step[k] !== undefined) ctx.addIssue({ code: 'custom', path: [k], message: `only image2image accepts ${k}` });
      }
    }
  });

export const jobSchema = z.strictObject({
  service: serviceSchema.default({ timeoutMs: 30_000 }),
  limits: limitsSchema.default(limitsSchema.parse({})),
  input: z.strictObject({
    dir: z.string().min(1),
    include: z.array(z.string().min(1)).min(1).default(['**/*.{jpg,jpeg,png,webp,JPG,JPEG,PNG,WEBP}']),
    exclude: z.array(z.string().min(1)).default([]),
  }),
  output: z.strictObject({
    dir: z.string().min(1),
  }),
  steps: z.array(stepSchema).min(1),
  ledger: z.string().min(1).default('./darkroom.db'),
  /** L2: what to do with a create whose outcome is unknown. */
  onAmbiguous: z.enum(['hold', 'resubmit']).default('hold'),
  /** Attempts per step when a task ends FAIL (the spec says FAIL is safe to retry). */
  maxAttempts: positiveInt.default(3),
  log: z
    .strictObject({
      level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'silent']).default('info'),
      file: z.string().min(1).optional(),
    })
    .default({ level: 'info' }),
});

export type JobFile = z.infer<typeof jobSchema>;
export type StepConfig = z.infer<typeof stepSchema>;
