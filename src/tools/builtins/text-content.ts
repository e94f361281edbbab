/** Text handling shared by the file tools: cutting to a byte budget, and telling text from binary. */

/** The longest prefix of `text` whose UTF-8 encoding fits in `maxBytes`, and whether it was cut. */
export function truncateUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  // Continuation bytes look like 10xxxxxx; back off to the start of the character they belong to.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return { text: bytes.subarray(0, end).toString('utf8'), truncated: true };
}

/** True when the buffer looks binary: a NUL byte within its first 8000 bytes, as git decides. */
export function looksBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, 8000).includes(0);
}
