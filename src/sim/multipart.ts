/**
 * A small multipart/form-data reader (RFC 7578) for the upload endpoint. It handles what
 * real clients send — quoted or bare boundaries, a preamble, CRLF or bare-LF line ends,
 * parts with or without a filename — and nothing exotic (no nested multipart, no
 * transfer encodings, which RFC 7578 deprecates).
 */

export interface FormPart {
  name: string;
  filename?: string;
  contentType?: string;
  data: Buffer;
}

export function boundaryOf(contentType: string | undefined): string | undefined {
  if (!contentType) return undefined;
  const [type, ...params] = contentType.split(';');
  if (type?.trim().toLowerCase() !== 'multipart/form-data') return undefined;
  for (const p of params) {
    const eq = p.indexOf('=');
    if (eq < 0) continue;
    if (p.slice(0, eq).trim().toLowerCase() !== 'boundary') continue;
    let v = p.slice(eq + 1).trim();
    if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1);
    return v.length > 0 && v.length <= 200 ? v : undefined;
  }
  return undefined;
}

/** Parts in order, or undefined when the body is not well-formed for this boundary. */
export function parseMultipart(body: Buffer, boundary: string): FormPart[] | undefined {
  const delimiter = Buffer.from('--' + boundary, 'latin1');
  // Later delimiters must start a line, so bytes inside a file that merely contain the
  // boundary text cannot end the part early.
  const lineDelimiter = Buffer.from('\n--' + boundary, 'latin1');
  const parts: FormPart[] = [];
  let pos = body.indexOf(delimiter);
  if (pos < 0) return undefined;
  for (;;) {
    pos += delimiter.length;
    // "--" after a delimiter closes the body; anything after it is epilogue.
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return parts;
    pos = skipLineEnd(body, skipTransportPadding(body, pos));
    if (pos < 0) return undefined;
    const found = body.indexOf(lineDelimiter, pos - 1);
    if (found < 0) return undefined; // unterminated: a truncated upload must not pass
    const next = found + 1;
    const part = parsePart(body.subarray(pos, stripLineEndBefore(body, next, pos)));
    if (!part) return undefined;
    parts.push(part);
    pos = next;
  }
}

function parsePart(raw: Buffer): FormPart | undefined {
  let headerEnd = raw.indexOf('\r\n\r\n');
  let sepLen = 4;
  if (headerEnd < 0) {
    headerEnd = raw.indexOf('\n\n');
    sepLen = 2;
  }
  if (headerEnd < 0) return undefined;
  const headerText = raw.subarray(0, headerEnd).toString('utf8');
  const data = raw.subarray(headerEnd + sepLen);
  let name: string | undefined;
  let filename: string | undefined;
  let contentType: string | undefined;
  for (const line of headerText.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-disposition') {
      name = dispositionParam(value, 'name');
      filename = dispositionParam(value, 'filename');
    } else if (key === 'content-type') {
      contentType = value;
    }
  }
  if (name === undefined) return undefined;
  const part: FormPart = { name, data };
  if (filename !== undefined) part.filename = filename;
  if (contentType !== undefined) part.contentType = contentType;
  return part;
}

function dispositionParam(value: string, param: string): string | undefined {
  // `name=` must not match inside `filename=`, hence the leading separator.
  const re = new RegExp(`(?:^|;)\\s*${param}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, 'i');
  const m = re.exec(value);
  if (!m) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
}

function skipTransportPadding(body: Buffer, pos: number): number {
  while (body[pos] === 0x20 || body[pos] === 0x09) pos++;
  return pos;
}

function skipLineEnd(body: Buffer, pos: number): number {
  if (body[pos] === 0x0d && body[pos + 1] === 0x0a) return pos + 2;
  if (body[pos] === 0x0a) return pos + 1;
  return -1;
}

/** The line end before a delimiter belongs to the delimiter, not to the part's data. */
function stripLineEndBefore(body: Buffer, end: number, start: number): number {
  if (end - 2 >= start && body[end - 2] === 0x0d && body[end - 1] === 0x0a) return end - 2;
  if (end - 1 >= start && body[end - 1] === 0x0a) return end - 1;
  return end;
}
