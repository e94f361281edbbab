/** A Markdown code block whose fence is longer than any backtick run inside it, so no content can close it early. */
export function fenced(value: string, language = ''): string {
  const longest = Math.max(0, ...[...value.matchAll(/`+/g)].map((match) => match[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}${language}\n${value}${value.endsWith('\n') ? '' : '\n'}${fence}`;
}
