/*
 * A byte budget for command output (README, "Approval, command policy and the sandbox"): keeps the
 * first `limit` bytes of UTF-8 text, cut on a character boundary, and counts what it dropped so the
 * reader sees a marker instead of a silent cut.
 */

export class OutputCap {
  private readonly parts: string[] = [];
  private kept = 0;
  private omitted = 0;

  constructor(private readonly limit: number) {}

  /** True once the budget is spent: later input is only counted, never decoded. */
  get full(): boolean {
    return this.omitted > 0 || this.kept >= this.limit;
  }

  get truncated(): boolean {
    return this.omitted > 0;
  }

  append(text: string): void {
    if (text === '') return;
    if (this.full) {
      this.omit(Buffer.byteLength(text));
      return;
    }
    const bytes = Buffer.byteLength(text);
    const room = this.limit - this.kept;
    if (bytes <= room) {
      this.parts.push(text);
      this.kept += bytes;
      return;
    }
    const encoded = Buffer.from(text, 'utf8');
    const cut = utf8Boundary(encoded, room);
    this.parts.push(encoded.subarray(0, cut).toString('utf8'));
    this.kept += cut;
    this.omit(bytes - cut);
  }

  omit(bytes: number): void {
    this.omitted += bytes;
  }

  text(): string {
    const body = this.parts.join('');
    return this.omitted > 0 ? `${body}\n…[output truncated: ${this.omitted} bytes omitted]` : body;
  }
}

/** The largest cut <= `at` that does not fall inside a multi-byte character. */
export function utf8Boundary(bytes: Uint8Array, at: number): number {
  let cut = Math.min(Math.max(at, 0), bytes.length);
  // 0b10xxxxxx is a continuation byte: the cut would split the character it belongs to.
  while (cut > 0 && cut < bytes.length && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut -= 1;
  return cut;
}
