import { MultipartReader } from '../../apps/api/src/console/multipart';

const BOUNDARY = '----formBoundary7MA4YWxkTrZu0gW';
const body = Buffer.from(
  [
    `--${BOUNDARY}`,
    'Content-Disposition: form-data; name="_csrf"',
    '',
    'token-123',
    `--${BOUNDARY}`,
    'Content-Disposition: form-data; name="confirmed"',
    '',
    'yes',
    `--${BOUNDARY}`,
    'Content-Disposition: form-data; name="file"; filename="people.csv"',
    'Content-Type: text/csv',
    '',
    // a line that looks like a boundary but is not one, and a CR LF inside the file
    `email,name\r\na@example.com,A\r\n--${BOUNDARY.slice(0, 10)}x,B\r\n`,
    `--${BOUNDARY}--`,
    '',
  ].join('\r\n'),
);

async function* chunked(size: number) {
  for (let i = 0; i < body.length; i += size) yield body.subarray(i, i + size);
}

async function read(size: number) {
  const reader = new MultipartReader(chunked(size), BOUNDARY);
  const parts: { name: string; filename?: string; text: string }[] = [];
  for (let part = await reader.next(); part; part = await reader.next()) parts.push({ ...part, text: await reader.text(1_000) });
  return parts;
}

describe('MultipartReader (the console upload)', () => {
  it.each([1, 7, 64, body.length])('reads the parts in order whatever the chunk size (%d bytes)', async (size) => {
    expect(await read(size)).toEqual([
      { name: '_csrf', filename: undefined, text: 'token-123' },
      { name: 'confirmed', filename: undefined, text: 'yes' },
      { name: 'file', filename: 'people.csv', text: `email,name\r\na@example.com,A\r\n--${BOUNDARY.slice(0, 10)}x,B\r\n` },
    ]);
  });

  it('finds the boundary of a multipart Content-Type, and refuses a body cut off', async () => {
    expect(MultipartReader.boundaryOf(`multipart/form-data; boundary=${BOUNDARY}`)).toBe(BOUNDARY);
    expect(MultipartReader.boundaryOf('multipart/form-data; boundary="quoted b"')).toBe('quoted b');
    expect(MultipartReader.boundaryOf('application/x-www-form-urlencoded')).toBeNull();
    const cut = new MultipartReader((async function* () { yield body.subarray(0, 200); })(), BOUNDARY);
    await expect((async () => { for (let p = await cut.next(); p; p = await cut.next()) await cut.text(1_000); })()).rejects.toMatchObject({ status: 400 });
  });
});
