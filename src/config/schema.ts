import { z } from 'zod';
import { CAPABILITIES, CAPABILITY_NAMES, capabilitiesWhere, MODES, RESOLUTIONS, type CapabilityInfo } from '../spec/capabilities.js';
import { DEFAULT_LEDGER_FILE } from './ledgerPath.js';
import { checkPattern } from './pattern.js';
import { looksLikeKey } from '../spec/key.js';

/**
 * The jobs YAML (docs/ARCHITECTURE.md § Command-line contract). Every default is written here, once.
 * Unknown keys are refused so that a typo ("stpes:") is an error, not a silently
 * ignored setting.
 */

const positiveInt = z.number().int().positive();

/** A span of time in seconds: a number (10, 0.5) or a duration with units (30s, 2m, 1h30m); kept as seconds. */
const seconds = z.union(
  [
    z.number().positive().max(86_400),
    z
      .string()
      .regex(/^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/, 'a duration like 10s, 2m or 1h30m')
      .refine((t) => t !== '' && durationSeconds(t) > 0, 'a duration above zero')
      .transform(durationSeconds),
  ],
  { error: 'expected seconds (10) or a duration like 10s, 2m or 1h30m' },
);

/** "1h30m" → 5400 (the grammar of --max-duration, run/guardTimes.ts). */
function durationSeconds(t: string): number {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(t);
  if (!m) return Number.NaN;
  return (Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0);
}

/** limits.maxInputPixels by default (see there). */
export const DEFAULT_MAX_INPUT_PIXELS = 100_000_000;

/** A businessType goes into the poll path: letters, digits, `_` and `-` only. */
const businessTypeValue = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a businessType name (letters, digits, _ and -)');

/** What `apiKeyEnv` must hold, said without its value (load.ts fromZod shows none for it: it may be the key itself). */
export const KEY_ENV_EXPECTED = 'this field takes the NAME of the environment variable that holds the key (like DARKROOM_API_KEY)';

const keyRef = z.strictObject({
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a variable name')
    .refine((v) => !looksLikeKey(v), 'looks like a key'),
});

const serviceSchema = z
  .strictObject({
    baseUrl: z.url({ protocol: /^https?$/ }).optional(),
    apiKeyEnv: keyRef.shape.apiKeyEnv.optional(),
    keys: z.array(keyRef).min(1).optional(),
    /**
     * The service's name as outputs state it (XMP `Iptc4xmpExt:AISystemUsed`, "the AI system
     * used"); default the base URL's host.
     */
    name: z.string().min(1).max(200).optional(),
    /** Per-call timeout of API calls, ms. */
    timeoutMs: positiveInt.default(30_000),
    /**
     * Spec gap: colorize and background removal have no businessType in the spec's
     * enumeration. Used for polling when the create response names none; default
     * COLORIZE and REMOVE_BACKGROUND (src/spec/capabilities.ts). The other capabilities'
     * values are fixed by the spec.
     */
    businessTypes: z
      .strictObject(Object.fromEntries(capabilitiesWhere((c) => !c.inEnumeration).map((c) => [c, businessTypeValue.optional()])))
      .optional(),
  })
  .refine((s) => !(s.apiKeyEnv && s.keys), { message: 'either apiKeyEnv or keys, not both' });

const limitsSchema = z.strictObject({
  callsPerMinute: positiveInt.default(100),
  callsPerHour: positiveInt.default(1000),
  activeTasks: positiveInt.default(3),
  /** Spec gap: the service's upload size limit is not shown; 20 MiB is our ceiling. */
  maxUploadBytes: positiveInt.default(20 * 1024 * 1024),
  /** Spec: "a client caps its total polling time"; the value is ours. */
  pollCapMinutes: z.number().positive().default(30),
  /** Parallel result downloads (not API calls, so not rate limited). */
  downloads: positiveInt.default(4),
  /**
   * Once nothing but downloads is left, how long a run keeps retrying the results it could
   * not download (the result host down, the disk full) before it ends, reporting them
   * "paid, not yet downloaded" for the next run to fetch first. 10: result-host and CDN
   * outages are mostly seconds to a few minutes (two, in the one measured), so ten minutes
   * rides out the usual ones while an unattended run still ends soon after its work; a
   * longer outage costs nothing but a second `darkroom run`.
   */
  downloadPatienceMinutes: z.number().nonnegative().default(10),
  /**
   * Spec gap: no maximum image size is shown. An input whose header says more pixels is
   * refused without being decoded (a decompression bomb: a 300 kB PNG can say 70000×70000,
   * 14.7 GB once decoded). 100 Mpx is 300 MB of RGB, a little more than the largest common
   * camera (~61 Mpx) and a 600 dpi scan of an A3 sheet (~70 Mpx).
   */
  maxInputPixels: positiveInt.default(DEFAULT_MAX_INPUT_PIXELS),
  /**
   * A spending guard: start a photo only when its every step fits in this many credits
   * spent since the run began (measured from GET /api/v1/credits and this run's creates);
   * exit 4, run again to continue. `--max-credits` wins over it. Unset: no limit.
   */
  maxCredits: positiveInt.optional(),
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
    // What each capability takes is the capability table's (spec/capabilities.ts).
    const info = CAPABILITIES[step.capability];
    const which = (fact: (c: CapabilityInfo) => boolean) => capabilitiesWhere(fact).join(', ');
    if (step.mode !== undefined && !info.acceptsMode) {
      ctx.addIssue({
        code: 'custom',
        path: ['mode'],
        message: `${step.capability} accepts no mode (only ${which((c) => c.acceptsMode)} do)`,
      });
    }
    if (step.resolution !== undefined && !info.acceptsResolution) {
      ctx.addIssue({ code: 'custom', path: ['resolution'], message: `only ${which((c) => c.acceptsResolution)} accepts a resolution` });
    }
    if (info.takesStyle && step.style === undefined) {
      ctx.addIssue({ code: 'custom', path: ['style'], message: `${step.capability} requires a style` });
    }
    if (!info.takesStyle) {
      for (const k of ['style', 'prompt', 'negativePrompt'] as const) {
        if (step[k] !== undefined) ctx.addIssue({ code: 'custom', path: [k], message: `only ${which((c) => c.takesStyle)} accepts ${k}` });
      }
    }
  });

/** What the service accepts as it is, and (input.transcode: auto) what darkroom converts first. */
export const DEFAULT_INCLUDE = ['**/*.{jpg,jpeg,png,webp,JPG,JPEG,PNG,WEBP}'] as const;
export const DEFAULT_INCLUDE_TRANSCODE = ['**/*.{jpg,jpeg,png,webp,tif,tiff,bmp,JPG,JPEG,PNG,WEBP,TIF,TIFF,BMP}'] as const;

const inputSchema = z
  .strictObject({
    /** The folder of photos; optional when `urls` lists every input. */
    dir: z.string().min(1).optional(),
    /** A file of public image URLs (one a line, or CSV with a `url` column and an optional `name` column): no upload. */
    urls: z.string().min(1).optional(),
    /** Default: JPG, PNG, WEBP, plus TIFF and BMP when transcode is auto. */
    include: z.array(z.string().min(1)).min(1).optional(),
    exclude: z.array(z.string().min(1)).default([]),
    /**
     * auto: TIFF, BMP and 16-bit PNG are converted locally (sharp) to JPEG, or PNG when
     * they have alpha, EXIF orientation is applied, and images over maxPixels are scaled
     * down, before upload; the source file is never modified. off: bytes go as they are,
     * and what the service would refuse is skipped.
     */
    transcode: z.enum(['auto', 'off']).default('auto'),
    /** Images with more pixels are scaled down to fit (transcode: auto) or skipped (off). No limit by default. */
    maxPixels: positiveInt.optional(),
    /**
     * Files and folders whose names start with a dot (`.thumbnails/`, `._photo.jpg` of macOS,
     * `.Trash-1000/`) are left out and counted; true includes them like any other.
     */
    hidden: z.boolean().default(false),
    /**
     * `darkroom run --follow`: how long a new file's size and modification time must stay
     * the same before it is taken (it must then also decode in full). Seconds, or a
     * duration like 30s, 2m.
     */
    settle: seconds.default(10),
    /**
     * `--follow` on a folder watched by scanning (a network mount, or `watch: poll`): how
     * often it is scanned for new files. Seconds, or a duration like 30s, 2m.
     */
    poll: seconds.default(30),
    /**
     * `--follow`: how new files are noticed. auto: by the file system's events on a local
     * disk, by scanning every `poll` on a network file system (NFS, SMB …), where events
     * from other machines do not arrive; events or poll: that way, whatever the disk.
     */
    watch: z.enum(['auto', 'events', 'poll']).default('auto'),
  })
  .superRefine((input, ctx) => {
    if (input.dir === undefined && input.urls === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['dir'],
        message: 'missing; expected a folder of photos (input.dir), a URL list (input.urls), or both',
      });
    }
  });

const outputSchema = z
  .strictObject({
    dir: z.string().min(1),
    /** mirror: the input tree is repeated under dir; flat: every output directly in dir. */
    layout: z.enum(['mirror', 'flat']).default('mirror'),
    /** File name of each output: {name} the input's name without extension, {step} the last step, {ext} from the result's real type. */
    pattern: z.string().min(1).default('{name}.{ext}'),
    /** Also download each earlier step's result (normally only its URL is passed on). */
    keepIntermediates: z.boolean().default(false),
    /**
     * The input's metadata on each output (EXIF, IPTC, XMP; src/metadata/tags.ts): `all`, or
     * `basic` (dates, GPS, title, description, keywords, creator, rights), each with the AI
     * disclosure and provenance in XMP; `none`: the service's bytes exactly.
     */
    metadata: z.enum(['all', 'basic', 'none']).default('all'),
    /**
     * Files beside each output: `json` (or true): <output>.json (source hash, steps, task ids,
     * timings); `xmp`: <output>.xmp, the input's metadata and the provenance as XMP (the
     * sidecar digiKam and darktable read); `both`; false: none.
     */
    sidecar: z.union([z.boolean(), z.enum(['json', 'xmp', 'both'])]).default(false),
  })
  .superRefine((output, ctx) => {
    const problem = checkPattern(output.pattern);
    if (problem) ctx.addIssue({ code: 'custom', path: ['pattern'], message: problem });
  });

export const jobSchema = z.strictObject({
  service: serviceSchema.default({ timeoutMs: 30_000 }),
  limits: limitsSchema.default(limitsSchema.parse({})),
  input: inputSchema,
  output: outputSchema,
  steps: z.array(stepSchema).min(1),
  /**
   * Where the ledger is: a path (`ledger: ./out/darkroom.db`), or that path with what is
   * allowed of it (`ledger: { path: …, allowNetworkFs: true }`). Both forms, so every job
   * written before stays valid. allowNetworkFs: a ledger on a network file system (NFS,
   * SMB …) is refused unless this says yes; then it uses the rollback journal, not WAL.
   */
  ledger: z
    .union(
      [
        z.string().min(1),
        z.strictObject({
          path: z.string().min(1).default(`./${DEFAULT_LEDGER_FILE}`),
          allowNetworkFs: z.boolean().default(false),
        }),
      ],
      { error: 'expected a path, or { path: …, allowNetworkFs: true }' },
    )
    .default(`./${DEFAULT_LEDGER_FILE}`),
  /** L2: what to do with a create whose outcome is unknown. */
  onAmbiguous: z.enum(['hold', 'resubmit']).default('hold'),
  /** Attempts per step when a task ends FAIL (the spec says FAIL is safe to retry). */
  maxAttempts: positiveInt.default(3),
  /**
   * Credits per image of each capability, for `darkroom plan`. The spec states 1 for
   * enhance and image2image; the others' costs are "not shown", so they are the operator's.
   */
  credits: z.partialRecord(z.enum(CAPABILITY_NAMES), z.number().nonnegative()).optional(),
  log: z
    .strictObject({
      level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'silent']).default('info'),
      file: z.string().min(1).optional(),
    })
    .default({ level: 'info' }),
});

export type JobFile = z.infer<typeof jobSchema>;
export type StepConfig = z.infer<typeof stepSchema>;
/** A job as written (the jobs YAML, or an object handed to the library): every key with a default may be left out. */
export type JobInput = z.input<typeof jobSchema>;
