import { describe, expect, it } from 'vitest';
import { call, newModel, testImage } from './helpers.js';

/** A PNG whose bytes hold a CRLF, dashes and a NUL after its magic: a parser that cut at them would break it. */
async function trickyPng(): Promise<Buffer> {
  const png = await testImage(8, 8, 'png');
  return Buffer.concat([png, Buffer.from([0x0d, 0x0a, 0x2d, 0x2d, 0x00, 0xff])]);
}

async function uploadBody(body: Buffer, contentType: string) {
  const model = newModel();
  const a = await call(model, 'POST', '/api/v1/image/upload', { body, headers: { 'content-type': contentType } });
  return { model, a };
}

describe('the simulator reads an upload as the platform reads a form (Request.formData)', () => {
  it('takes a quoted boundary among other parameters, and the image beside other fields, byte for byte', async () => {
    const image = await trickyPng();
    const body = Buffer.concat([
      Buffer.from('--a b:c\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n'),
      Buffer.from('--a b:c\r\nContent-Disposition: form-data; name="image"; filename="x.png"\r\nContent-Type: image/png\r\n\r\n'),
      image,
      Buffer.from('\r\n--a b:c--\r\n'),
    ]);
    const { model, a } = await uploadBody(body, 'Multipart/Form-Data; charset=utf-8; boundary="a b:c"');
    expect(a.status).toBe(200);
    const res = await model.handleResult({
      method: 'GET',
      path: new URL(a.body.data.imageUrl).pathname,
      headers: {},
      body: Buffer.alloc(0),
    });
    expect(res.body.equals(image)).toBe(true);
  });

  it('refuses a content type without a boundary, and a body cut before its closing delimiter', async () => {
    const image = await trickyPng();
    const whole = Buffer.concat([
      Buffer.from('--b\r\nContent-Disposition: form-data; name="image"; filename="x.png"\r\n\r\n'),
      image,
      Buffer.from('\r\n--b--\r\n'),
    ]);
    expect((await uploadBody(whole, 'multipart/form-data; boundary=b')).a.status).toBe(200);
    for (const [body, type] of [
      [whole, 'multipart/form-data'],
      [whole.subarray(0, whole.length - 8), 'multipart/form-data; boundary=b'],
    ] as const) {
      const { a } = await uploadBody(body, type);
      expect(a.status).toBe(400);
      expect(a.body.code).toBe(-2);
    }
  });
});
