/**
 * The capability table, written once: the spec's facts (path, mode, resolution, style,
 * businessType, credits, the result's format where the spec says it) and darkroom's own
 * (the History action). The client builds requests from it, the config schema checks the
 * job's steps against it, the outputs name results by it, the simulator serves from it, and
 * a test keeps the docs' table equal to it. A new capability is one row here.
 */

export const CAPABILITY_NAMES = ['enhance', 'restore', 'colorize', 'unblur', 'upscale', 'remove-background', 'image2image'] as const;

export type Capability = (typeof CAPABILITY_NAMES)[number];

export const MODES = ['general', 'graphics', 'portrait', 'text'] as const;
export type Mode = (typeof MODES)[number];

/**
 * Spec gap: upscale's resolution field name and values are "not shown". darkroom sends
 * `resolution` with "4K" or "8K" (the two targets the capability is described with).
 */
export const RESOLUTIONS = ['4K', '8K'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

export interface CapabilityInfo {
  readonly path: string;
  /** The spec's capability table and endpoint text: enhance, unblur and upscale take `mode`. */
  readonly acceptsMode: boolean;
  /**
   * Takes `resolution` ("4K" or "8K"): the spec says a request "may name a resolution" for
   * the five endpoints without a body table, and upscale's description names the values.
   */
  readonly acceptsResolution: boolean;
  /** Takes `style` (required) and `prompt`, `negativePrompt` (Image to Image's body). */
  readonly takesStyle: boolean;
  /** The result's format where the spec says it (background removal: a transparent-background result, PNG); else the service's choice. */
  readonly resultFormat: 'png' | null;
  /**
   * businessType for polling. Spec gap: colorize and background removal have none in the
   * enumeration; darkroom uses COLORIZE and REMOVE_BACKGROUND unless the create response
   * names one (the config can override this: service.businessTypes).
   */
  readonly businessType: string;
  readonly inEnumeration: boolean;
  /** Credits per image where the spec states it; other costs are "not shown" (config). */
  readonly credits: number | null;
  /**
   * What the step did to the picture, in XMP's words (`stEvt:action` of the output's
   * `xmpMM:History`): darkroom's, not the spec's.
   */
  readonly historyAction: 'edited' | 'resized';
}

export const CAPABILITIES: Readonly<Record<Capability, CapabilityInfo>> = {
  enhance: {
    path: '/api/v1/enhance/generate',
    acceptsMode: true,
    acceptsResolution: false,
    takesStyle: false,
    resultFormat: null,
    businessType: 'ENHANCE',
    inEnumeration: true,
    credits: 1,
    historyAction: 'edited',
  },
  restore: {
    path: '/api/v1/restore/generate',
    acceptsMode: false,
    acceptsResolution: false,
    takesStyle: false,
    resultFormat: null,
    businessType: 'RESTORE',
    inEnumeration: true,
    credits: null,
    historyAction: 'edited',
  },
  colorize: {
    path: '/api/v1/colorize/generate',
    acceptsMode: false,
    acceptsResolution: false,
    takesStyle: false,
    resultFormat: null,
    businessType: 'COLORIZE',
    inEnumeration: false,
    credits: null,
    historyAction: 'edited',
  },
  unblur: {
    path: '/api/v1/unblur/generate',
    acceptsMode: true,
    acceptsResolution: false,
    takesStyle: false,
    resultFormat: null,
    businessType: 'UNBLUR',
    inEnumeration: true,
    credits: null,
    historyAction: 'edited',
  },
  upscale: {
    path: '/api/v1/upscale/generate',
    acceptsMode: true,
    acceptsResolution: true,
    takesStyle: false,
    resultFormat: null,
    businessType: 'UPSCALE',
    inEnumeration: true,
    credits: null,
    historyAction: 'resized',
  },
  'remove-background': {
    path: '/api/v1/background/remove/generate',
    acceptsMode: false,
    acceptsResolution: false,
    takesStyle: false,
    resultFormat: 'png',
    businessType: 'REMOVE_BACKGROUND',
    inEnumeration: false,
    credits: null,
    historyAction: 'edited',
  },
  image2image: {
    path: '/api/v1/image2image/generate',
    acceptsMode: false,
    acceptsResolution: false,
    takesStyle: true,
    resultFormat: null,
    businessType: 'IMAGE_TO_IMAGE',
    inEnumeration: true,
    credits: 1,
    historyAction: 'edited',
  },
};

/** The capabilities with a fact set, in the table's order: "enhance, unblur, upscale". */
export function capabilitiesWhere(fact: (c: CapabilityInfo) => boolean): Capability[] {
  return CAPABILITY_NAMES.filter((c) => fact(CAPABILITIES[c]));
}

export function isCapability(s: string): s is Capability {
  return (CAPABILITY_NAMES as readonly string[]).includes(s);
}
