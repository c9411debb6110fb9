import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config/index.js';

/**
 * input.urls: photos that already live at public URLs. The service fetches them itself, so
 * they cost no upload call. Two forms:
 *
 *   https://archive.example.org/scans/0001.jpg     one URL a line; blank lines and # comments ignored
 *
 *   url,name                                        CSV with a header naming a `url` column and,
 *   https://…/0001.jpg,grandparents/wedding         optionally, the output name (`name`, `output`,
 *                                                   `output_name` or `filename`; folders allowed)
 *
 * Without a name, the output is named after the URL's last path segment. Every line is
 * checked before any call: a bad one stops the run with exit code 2, naming its line.
 */

export interface UrlEntry {
  readonly url: string;
  /** The output name ({name} of output.pattern), possibly with folders ('a/b/name'), no extension. */
  readonly name: string;
  /** 1-based line in the file. */
  readonly line: number;
}

const NAME_COLUMNS = ['name', 'output', 'output_name', 'outputname', 'filename', 'file'];
const IMAGE_EXT = /\.(jpe?g|png|webp|tiff?|bmp|gif|heic|avif)$/i;

export function readUrlList(file: string): UrlEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(path.basename(file), '', `cannot read the URL list (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  return parseUrlList(text, path.basename(file));
}

export function parseUrlList(text: string, shownFile: string): UrlEntry[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const out: UrlEntry[] = [];
  let csv: { delimiter: string; url: number; name: number } | null = null;
  let first = true;
  lines.forEach((raw, i) => {
    const lineNo = i + 1;
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    if (first) {
      first = false;
      const delimiter = line.includes('\t') ? '\t' : ',';
      const cells = splitCsv(line, delimiter, shownFile, lineNo).map((c) => c.trim().toLowerCase());
      const urlCol = cells.indexOf('url');
      if (urlCol >= 0) {
        csv = { delimiter, url: urlCol, name: cells.findIndex((c) => NAME_COLUMNS.includes(c)) };
        return;
      }
    }
    let url: string;
    let name = '';
    if (csv) {
      const { delimiter, url: u, name: n } = csv;
      const cells = splitCsv(raw, delimiter, shownFile, lineNo);
      url = (cells[u] ?? '').trim();
      name = n >= 0 ? (cells[n] ?? '').trim() : '';
    } else {
      url = line;
    }
    checkUrl(url, shownFile, lineNo);
    out.push({ url, name: name !== '' ? cleanName(name) : nameFromUrl(url), line: lineNo });
  });
  return out;
}

function checkUrl(url: string, file: string, line: number): void {
  let u: URL | undefined;
  try {
    u = /\s/.test(url) ? undefined : new URL(url);
  } catch {
    u = undefined;
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') {
    throw new ConfigError(file, `line ${line}`, `expected an http(s) image URL, got ${JSON.stringify(url)}`);
  }
}

/** One CSV line (RFC 4180 quoting, no line breaks inside fields). */
function splitCsv(line: string, delimiter: string, file: string, lineNo: number): string[] {
  const cells: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c === '"' && cell.trim() === '') {
      quoted = true;
      cell = '';
    } else if (c === delimiter) {
      cells.push(cell);
      cell = '';
    } else {
      cell += c;
    }
  }
  if (quoted) throw new ConfigError(file, `line ${lineNo}`, 'a quoted field is not closed (fields cannot span lines)');
  cells.push(cell);
  return cells;
}

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
 * A name a file system takes everywhere: folders kept (never '.' or '..'), characters
 * Windows or macOS refuse replaced by '_', an image extension dropped (the result's real
 * type gives the extension).
 */
export function cleanName(name: string): string {
  const parts = name
    .replace(/\\/g, '/')
    .split('/')
    .map((p) => p.replace(/[<>:"|?*\u0000-\u001f]/g, '_').trim().replace(/[. ]+$/, ''))
    .filter((p) => p !== '' && p !== '.' && p !== '..');
  if (parts.length === 0) return '';
  parts[parts.length - 1] = parts.at(-1)!.replace(IMAGE_EXT, '') || parts.at(-1)!;
  return parts.map((p) => (p.length > 120 ? p.slice(0, 120) : p)).join('/');
}
