/** How many times `needle` occurs in `text`, without overlaps (file_edit and its probe count alike). */
export function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count += 1;
  return count;
}
