import { describe, expect, it } from 'vitest';
import { boundaryOf, parseMultipart } from '../../src/sim/multipart.js';

const bin = Buffer.from([0x89, 0x50, 0x0d, 0x0a, 0x2d, 0x2d, 0x00, 0xff]);

describe('multipart parsing', () => {
  it('reads boundaries quoted or bare, and rejects other content types', () => {
    expect(boundaryOf('multipart/form-data; boundary=abc')).toBe('abc');
    expect(boundaryOf('Multipart/Form-Data; charset=utf-8; boundary="a b:c"')).toBe('a b:c');
    expect(boundaryOf('application/json')).toBeUndefined();
    expect(boundaryOf('multipart/form-data')).toBeUndefined();
    expect(boundaryOf(undefined)).toBeUndefined();
  });

  it('parses parts with a preamble, binary data containing CRLF and dashes, and an epilogue', () => {
    const body = Buffer.concat([
      Buffer.from('preamble\r\n--b0\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n'),
      Buffer.from('--b0\r\nContent-Disposition: form-data; filename="x.png"; name="image"\r\nContent-Type: image/png\r\n\r\n'),
      bin,
      Buffer.from('\r\n--b0--\r\nepilogue'),
    ]);
    const parts = parseMultipart(body, 'b0')!;
    expect(parts.map((p) => p.name)).toEqual(['note', 'image']);
    expect(parts[0]!.data.toString()).toBe('hello');
    expect(parts[1]!.filename).toBe('x.png');
    expect(parts[1]!.contentType).toBe('image/png');
    expect(parts[1]!.data.equals(bin)).toBe(true);
  });

  it('accepts bare LF line ends', () => {
    const body = Buffer.from('--b\nContent-Disposition: form-data; name="image"\n\nDATA\n--b--\n');
    expect(parseMultipart(body, 'b')![0]!.data.toString()).toBe('DATA');
  });

  it('rejects a body cut before its closing delimiter', () => {
    const body = Buffer.from('--b\r\nContent-Disposition: form-data; name="image"\r\n\r\nDATA');
    expect(parseMultipart(body, 'b')).toBeUndefined();
    expect(parseMultipart(Buffer.from('no delimiter at all'), 'b')).toBeUndefined();
  });
});
