import sanitizeFilename from 'sanitize-filename';

/**
 * One segment of an output name made safe on every file system darkroom's outputs may be
 * copied to (Windows, macOS, Linux, exFAT cards):
 *
 * - characters Windows or macOS refuse, and control characters, become '_' (sanitize-filename);
 * - Windows' reserved device names (CON, PRN, AUX, NUL, COM1–9, LPT1–9, with any extension,
 *   any case) get a '_' after the device part: `CON` → `CON_`, `nul.old` → `nul_.old`
 *   (sanitize-filename would replace the whole name, losing it);
 * - leading and trailing spaces and trailing dots go (Windows drops them silently);
 * - at most MAX_UNITS UTF-16 units (the cut darkroom always made, so names already safe do
 *   not change) and MAX_BYTES UTF-8 bytes (room for `.{step}`, `~2` and the extension under
 *   the 255-byte limit), cut between graphemes (Intl.Segmenter): never inside an emoji,
 *   a flag or a letter with its accents.
 *
 * '' for a segment with nothing left (the caller drops it).
 */
const MAX_UNITS = 120;
const MAX_BYTES = 200;

const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$/i;
// eslint-disable-next-line no-control-regex -- control characters are what file names must not hold
const REFUSED = /[<>:"|?*\u0000-\u001f]/g;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

function safeSegment(segment: string): string {
  let s = tidy(segment.replace(REFUSED, '_'));
  s = s.replace(WINDOWS_RESERVED, (_m, device: string, rest: string | undefined) => `${device}_${rest ?? ''}`);
  // The rest of sanitize-filename's rules (C1 controls and the like); by now a no-op on
  // ordinary names, and its own 255-byte cut never bites after ours.
  s = tidy(sanitizeFilename(truncate(s), { replacement: '_' }));
  return s === '.' || s === '..' ? '' : s;
}

function tidy(s: string): string {
  return s.trim().replace(/[. ]+$/, '');
}

/** The longest prefix of whole graphemes within MAX_UNITS and MAX_BYTES. */
function truncate(s: string, maxUnits = MAX_UNITS, maxBytes = MAX_BYTES): string {
  if (s.length <= maxUnits && Buffer.byteLength(s) <= maxBytes) return s;
  let out = '';
  let bytes = 0;
  for (const { segment } of graphemes.segment(s)) {
    const b = Buffer.byteLength(segment);
    if (out.length + segment.length > maxUnits || bytes + b > maxBytes) break;
    out += segment;
    bytes += b;
  }
  return out;
}

/** An image extension a name may carry; the result's real type gives the output's. */
const IMAGE_EXT = /\.(jpe?g|png|webp|tiff?|bmp|gif|heic|avif)$/i;

/** The URL's last path segment without its extension, else its host: a readable default output name. */
export function nameFromUrl(url: string): string {
  const u = new URL(url);
  const seg = u.pathname.split('/').filter(Boolean).at(-1) ?? '';
  let decoded = seg;
  try {
    decoded = decodeURIComponent(seg);
  } catch {
    decoded = seg;
  }
  return cleanName(decoded.replace(IMAGE_EXT, '')) || cleanName(u.hostname) || 'image';
}

/**
 * A name a file system takes everywhere: folders kept (never '.' or '..'), each segment made
 * safe (safeSegment: refused characters, Windows device names, grapheme-safe length), an
 * image extension dropped (the result's real type gives the extension).
 */
export function cleanName(name: string): string {
  const parts = name
    .replace(/\\/g, '/')
    .split('/')
    .map((p) => p.trim().replace(/[. ]+$/, ''))
    .filter((p) => p !== '' && p !== '.' && p !== '..');
  if (parts.length === 0) return '';
  parts[parts.length - 1] = parts.at(-1)!.replace(IMAGE_EXT, '') || parts.at(-1)!;
  return parts
    .map(safeSegment)
    .filter((p) => p !== '')
    .join('/');
}
