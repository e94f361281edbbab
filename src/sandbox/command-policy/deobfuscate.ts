/*
 * The de-obfuscated reading of a command line (docs/command-policy.md): what a reader who ignores tricks
 * would see. Quotes and backslash escapes are removed later by the shell reader, word by
 * word; this file undoes what works on the raw text: compatibility forms, invisible
 * characters, exotic spaces and expansions that are spaces or nothing in practice.
 */

/**
 * Characters that show as nothing: soft hyphen, zero-width space/joiners, bidi marks, word
 * joiner, BOM, Hangul fillers, variation selectors and tag characters.
 */
const INVISIBLE =
  /[\u00AD\u034F\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\u{E0000}-\u{E007F}]/gu;
const LINE_SEPARATORS = /[\u0085\u2028\u2029]/g;
/** Spaces NFKC leaves alone (it already maps NBSP, U+2000–U+200A, U+3000 to a space) and control characters. */
const ODD_SPACES = /[\u0000-\u0008\u000B-\u001F\u007F\u1680]/g;
/** `$IFS`, `${IFS}` and `${IFS…}` expand to whitespace. */
const IFS = /\$\{IFS[^}]{0,32}\}|\$IFS(?![A-Za-z0-9_])/g;
/** Positional and special parameters are empty in a fresh `sh -c`: `$9`, `$@`, `${1}`. */
const EMPTY_PARAMETERS = /\$(?:[1-9@*]|\{[1-9@*]\})/g;

export function deobfuscate(text: string): string {
  return text
    .normalize('NFKC')
    .replace(INVISIBLE, '')
    .replace(LINE_SEPARATORS, '\n')
    .replace(ODD_SPACES, ' ')
    .replace(IFS, ' ')
    .replace(EMPTY_PARAMETERS, '');
}

/** The de-obfuscated text with every quote and backslash dropped: a reading for operator rules. */
export function withoutQuotes(text: string): string {
  return text.replace(/['"\\]/g, '');
}
