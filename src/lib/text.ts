// Shortening text for a member's eyes: always between whole characters as a reader sees them (grapheme
// clusters: an emoji with its skin tone, a flag, a letter with its accents), never inside one, which
// Discord would show as a broken glyph. Lengths are UTF-16 code units, what JavaScript and Discord's
// limits count.

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The longest start of `text` made of whole graphemes and at most `maxLength` long. */
export function graphemePrefix(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  let end = 0;
  for (const { index, segment } of graphemes.segment(text)) {
    if (index + segment.length > maxLength) break;
    end = index + segment.length;
  }
  return text.slice(0, end);
}

/** `text` if it fits in `maxLength`, else its start in whole graphemes followed by `…`, `maxLength` at most in all. */
export function shorten(text: string, maxLength: number, ellipsis = '…'): string {
  if (text.length <= maxLength) return text;
  return `${graphemePrefix(text, Math.max(0, maxLength - ellipsis.length))}${ellipsis}`;
}

/**
 * `text` in pieces of at most `maxLength`, each ending between whole graphemes, at the last line break or
 * space of its stretch when there is one in its second half (so words stay whole); nothing is left out.
 */
export function splitText(text: string, maxLength: number): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > maxLength) {
    const stretch = graphemePrefix(rest, maxLength);
    const breakAt = Math.max(stretch.lastIndexOf('\n'), stretch.lastIndexOf(' '));
    // A stretch with no grapheme that fits (not with any real limit) still moves on by one code point.
    const end = breakAt >= maxLength / 2 ? breakAt + 1 : stretch.length || (rest.codePointAt(0)! > 0xffff ? 2 : 1);
    pieces.push(rest.slice(0, end));
    rest = rest.slice(end);
  }
  if (rest.length > 0 || pieces.length === 0) pieces.push(rest);
  return pieces;
}
