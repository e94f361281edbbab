/*
 * Text width without a browser: Arial / Helvetica / Liberation Sans advance widths (in
 * thousandths of an em), so the layout can size boxes before any renderer sees them.
 * Unlisted characters count as wide ones, so an estimate errs towards room to spare.
 */
const ADVANCE: Record<string, number> = {
  ' ': 278, '!': 278, '"': 355, '#': 556, $: 556, '%': 889, '&': 667, "'": 191, '(': 333, ')': 333,
  '*': 389, '+': 584, ',': 278, '-': 333, '.': 278, '/': 278, ':': 278, ';': 278, '<': 584, '=': 584,
  '>': 584, '?': 556, '@': 1015, '[': 278, '\\': 278, ']': 278, '^': 469, _: 556, '`': 333, '{': 334,
  '|': 260, '}': 334, '~': 584, '…': 1000, '·': 278,
  a: 556, b: 556, c: 500, d: 556, e: 556, f: 278, g: 556, h: 556, i: 222, j: 222, k: 500, l: 222, m: 833,
  n: 556, o: 556, p: 556, q: 556, r: 333, s: 500, t: 278, u: 556, v: 500, w: 722, x: 500, y: 500, z: 500,
  A: 667, B: 667, C: 722, D: 722, E: 667, F: 611, G: 778, H: 722, I: 278, J: 500, K: 667, L: 556, M: 833,
  N: 722, O: 778, P: 667, Q: 778, R: 722, S: 667, T: 611, U: 722, V: 667, W: 944, X: 667, Y: 667, Z: 611,
};
const DIGIT = 556;
const UNKNOWN = 750;
/** Bold Arial is about 8% wider; a little more covers Helvetica and Segoe UI. */
const BOLD_FACTOR = 1.1;
const REGULAR_FACTOR = 1.04;

export function textWidth(text: string, fontSize: number, bold = false): number {
  let units = 0;
  for (const char of text) units += ADVANCE[char] ?? (char >= '0' && char <= '9' ? DIGIT : UNKNOWN);
  return (units / 1000) * fontSize * (bold ? BOLD_FACTOR : REGULAR_FACTOR);
}
