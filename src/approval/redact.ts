/*
 * Secret redaction for what approval prompts and their events show: values under secret-looking
 * keys, and secrets recognisable in free text (bearer tokens, API keys, private-key blocks,
 * credentials in URLs, secret-looking `KEY=value` assignments). Errs on the side of hiding.
 */

export const REDACTED = '***';

/** Object keys whose values are never shown. */
export const SECRET_KEY =
  /token|secret|password|passwd|api[_-]?key|authorization|auth|cookie|private[_-]?key|credential/i;

const SECRET_WORD = 'token|secret|password|passwd|api[_-]?key|authorization|auth|cookie|private[_-]?key|credential';
const QUOTED_OR_BARE = `"[^"\\n]*"|'[^'\\n]*'|[^\\s"',;&|)]+`;

/** Applied in order: whole blocks and headers first, so later rules never see half a secret. */
const TEXT_RULES: [RegExp, (...groups: string[]) => string][] = [
  [
    /-----BEGIN ([A-Z0-9 ]*?)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g,
    (_, kind) => `-----BEGIN ${kind}PRIVATE KEY----- ${REDACTED} -----END ${kind}PRIVATE KEY-----`,
  ],
  // Credentials in a URL: scheme://user:password@host.
  [/\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@]+):[^\s/@]+@/gi, (_, prefix) => `${prefix}:${REDACTED}@`],
  // An Authorization or Cookie header: everything up to the end of the line or quote.
  [
    /\b((?:proxy-)?authorization|(?:set-)?cookie|x-api-key)([ \t]*:[ \t]*)[^\n"']+/gi,
    (_, name, sep) => `${name}${sep}${REDACTED}`,
  ],
  [/\bBearer[ \t]+[A-Za-z0-9._~+/=-]+/gi, () => `Bearer ${REDACTED}`],
  // curl -u user:password
  [/(\s(?:-u|--user)[ \t]+)([^\s:'"]+):[^\s'"]+/g, (_, flag, user) => `${flag}${user}:${REDACTED}`],
  // KEY=value, "key": "value", --password=value, export TOKEN=value ...
  [
    new RegExp(`([A-Za-z0-9_.-]*(?:${SECRET_WORD})[A-Za-z0-9_.-]*)(["']?[ \\t]*[:=][ \\t]*)(${QUOTED_OR_BARE})`, 'gi'),
    (_, name, sep, value) => `${name}${sep}${quoteLike(value)}`,
  ],
  // --token value (a secret-looking flag followed by its value).
  [
    new RegExp(`((?:^|\\s)--?[A-Za-z0-9_-]*(?:${SECRET_WORD})[A-Za-z0-9_-]*[ \\t]+)(?!-)(${QUOTED_OR_BARE})`, 'gi'),
    (_, flag, value) => `${flag}${quoteLike(value)}`,
  ],
  [/\bsk-[A-Za-z0-9_-]{16,}/g, () => `sk-${REDACTED}`],
  [/\b(AKIA|ASIA)[0-9A-Z]{16}\b/g, (_, prefix) => `${prefix}${REDACTED}`],
  [/\b(gh[pousr]_)[A-Za-z0-9]{20,}/g, (_, prefix) => `${prefix}${REDACTED}`],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/g, () => `github_pat_${REDACTED}`],
  [/\b(xox[abprs]-)[A-Za-z0-9-]{10,}/g, (_, prefix) => `${prefix}${REDACTED}`],
];

function quoteLike(value: string): string {
  const quote = value[0];
  return quote === '"' || quote === "'" ? `${quote}${REDACTED}${quote}` : REDACTED;
}

/** The text with every recognisable secret replaced by `***`. */
export function redactText(text: string): string {
  return TEXT_RULES.reduce((result, [pattern, replace]) => result.replace(pattern, replace), text);
}

/** A deep copy with secret-keyed values replaced by `***` and every string redacted. */
export function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, SECRET_KEY.test(key) ? REDACTED : redactValue(item)]),
    );
  }
  return value;
}
