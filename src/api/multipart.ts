import { randomUUID } from 'node:crypto';

export interface MultipartBody {
  body: Buffer;
  contentType: string;
}

/** HTML's form encoding of a quoted parameter value: `"`, CR and LF are percent-escaped. */
function quoteParam(value: string): string {
  return value.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** A header value must not break the part's header block. */
function headerValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\x00-\x1f\x7f]/g, '');
}

/** One file field as multipart/form-data (RFC 7578), built by hand so the bytes are exact. */
export function multipartFile(field: string, bytes: Uint8Array, filename: string, contentType: string): MultipartBody {
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let boundary: string;
  // A boundary that occurs in the file would cut it short; with 128 random bits this
  // loop runs once, but a crafted file cannot make it truncate.
  do boundary = `darkroom-${randomUUID().replace(/-/g, '')}`;
  while (data.includes(boundary));

  const head =
    `--${boundary}\r\n` +
    `Content-Disposition: form-data; name="${quoteParam(field)}"; filename="${quoteParam(filename)}"\r\n` +
    `Content-Type: ${headerValue(contentType) || 'application/octet-stream'}\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head, 'utf8'), data, Buffer.from(tail, 'utf8')]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}
