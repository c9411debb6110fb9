import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { cleanName, nameFromUrl } from '../outputs/safeName.js';
import { ConfigError } from '../errors.js';

/**
 * input.urls: photos that already live at public URLs. The service fetches them itself, so
 * they cost no upload call. Two forms:
 *
 *   https://archive.example.org/scans/0001.jpg     one URL a line; blank lines and # comments ignored
 *
 *   url,name                                        CSV (`,`, `;` or tab, found from the header) naming a `url` column and,
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

export function readUrlList(file: string): UrlEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(path.basename(file), '', `cannot read the URL list (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  return parseUrlList(text, path.basename(file));
}

/** Delimiters tried on the header line, in this order: the first that yields a `url` column wins. */
const DELIMITERS = ['\t', ';', ','] as const;

export function parseUrlList(text: string, shownFile: string): UrlEntry[] {
  const body = text.replace(/^\uFEFF/, '');
  const lines = body.split(/\r?\n/);
  const firstIdx = lines.findIndex((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  if (firstIdx < 0) return [];
  const header = headerOf(lines[firstIdx]!);
  if (header === null) return plainList(lines, shownFile);
  return csvList(body, firstIdx + 1, header, shownFile);
}

/** The header line's delimiter and columns, when it names a `url` column (else: a plain list). */
function headerOf(line: string): { delimiter: string; url: number; name: number } | null {
  for (const delimiter of DELIMITERS) {
    if (!line.includes(delimiter) && line.trim().toLowerCase() !== 'url') continue;
    let cells: string[];
    try {
      cells = (parse(line, { delimiter, relax_quotes: true, relax_column_count: true }) as string[][])[0] ?? [];
    } catch {
      continue;
    }
    const names = cells.map((c) => c.trim().toLowerCase());
    const url = names.indexOf('url');
    if (url >= 0) return { delimiter, url, name: names.findIndex((c) => NAME_COLUMNS.includes(c)) };
  }
  return null;
}

/** One URL a line; blank lines and `#` comments skipped. */
function plainList(lines: readonly string[], shownFile: string): UrlEntry[] {
  const out: UrlEntry[] = [];
  lines.forEach((raw, i) => {
    const url = raw.trim();
    if (url === '' || url.startsWith('#')) return;
    checkUrl(url, shownFile, i + 1);
    out.push({ url, name: nameFromUrl(url), line: i + 1 });
  });
  return out;
}

/**
 * CSV or TSV by csv-parse (RFC 4180: quoted fields may hold the delimiter, quotes and line
 * breaks), from the header line on; whole-line `#` comments and blank lines skipped.
 */
function csvList(body: string, headerLine: number, h: { delimiter: string; url: number; name: number }, shownFile: string): UrlEntry[] {
  let records: string[][];
  // Where each record ends in the file (csv-parse counts lines as it reads).
  const ends: number[] = [];
  try {
    records = parse(body, {
      delimiter: h.delimiter,
      // Both, as a file edited on two systems has them (the line numbers must stay right).
      record_delimiter: ['\r\n', '\n'],
      from_line: headerLine + 1,
      relax_quotes: true,
      relax_column_count: true,
      skip_empty_lines: true,
      comment: '#',
      comment_no_infix: true,
      on_record: (record: string[], context: { lines: number }) => {
        ends.push(context.lines);
        return record;
      },
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    const why = code === 'CSV_QUOTE_NOT_CLOSED' ? 'a quoted field is not closed' : `not readable as CSV (${code ?? String(err)})`;
    throw new ConfigError(shownFile, `line ${(ends.at(-1) ?? headerLine) + 1}`, why);
  }
  const out: UrlEntry[] = [];
  let start = headerLine;
  for (const [i, record] of records.entries()) {
    const end = ends[i] ?? start + 1;
    // A record's first line: after the previous one's last, past blank or comment lines.
    const line = Math.max(start + 1, end - countBreaks(record));
    start = end;
    const url = (record[h.url] ?? '').trim();
    const name = h.name >= 0 ? (record[h.name] ?? '').trim().replace(/\s*\r?\n\s*/g, ' ') : '';
    checkUrl(url, shownFile, line);
    out.push({ url, name: name !== '' ? cleanName(name) : nameFromUrl(url), line });
  }
  return out;
}

function countBreaks(record: readonly string[]): number {
  return record.reduce((n, c) => n + (c.match(/\n/g)?.length ?? 0), 0);
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
