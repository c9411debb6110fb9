import path from 'node:path';
import { shownText } from '../display.js';
import type { ReviewPhoto } from '../ledger/index.js';

/**
 * A photo as the page's script reads it. Every text from outside (the path, its folder, a
 * caption, a reason) is shown as docs/names.md says: controls, bidi marks and invisible spaces
 * escaped (shownText); the script puts it in the page as text, never as HTML.
 */
export interface PhotoJson {
  readonly id: number;
  /** The path under input.dir, as shown. */
  readonly p: string;
  /** Its folder ('' at the top), as shown. */
  readonly f: string;
  /** done, failed, skipped, held. */
  readonly s: string;
  /** The step a problem stopped at, from 1. */
  readonly k: number;
  /** Why it failed or is held. */
  readonly r: string | null;
  readonly caption: string | null;
  readonly taken: string | null;
  /** The output's SHA-256: a decision names the output it was about. */
  readonly h: string | null;
  readonly decision: 'accept' | 'reject' | null;
  readonly why: string | null;
  readonly at: number | null;
  /** A URL input: darkroom keeps no copy of it. */
  readonly url: boolean;
}

const shown = (s: string | null) => (s === null ? null : shownText(s));

export function photoJson(p: ReviewPhoto): PhotoJson {
  const folder = path.posix.dirname(p.path);
  return {
    id: p.id,
    p: shownText(p.path),
    f: folder === '.' ? '' : shownText(folder),
    s: p.state,
    k: p.step + 1,
    r: p.state === 'done' ? null : shown(p.reason),
    caption: shown(p.caption),
    taken: shown(p.taken),
    h: p.sha256,
    decision: p.decision,
    why: shown(p.decisionReason),
    at: p.decidedMs,
    url: /^[a-z][a-z0-9+.-]*:\/\//i.test(p.srcPath),
  };
}
