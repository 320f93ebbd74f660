import { describe, expect, it } from 'vitest';
import { graphemePrefix, shorten, splitText } from '../../src/lib/text.ts';

// What a member sees of a shortened prompt or name: whole characters, never half an emoji.

const family = '👨‍👩‍👧‍👦'; // 11 UTF-16 units, one character on screen
const flag = '🇯🇵'; // 4 units

describe('shortening text', () => {
  it('keeps text that fits as it is', () => {
    expect(shorten('a dragon', 8)).toBe('a dragon');
    expect(graphemePrefix(family, 11)).toBe(family);
  });

  it('cuts between whole characters: an emoji family, a flag, an accent stay whole or go whole', () => {
    expect(graphemePrefix(`${family}${family}`, 20)).toBe(family);
    expect(graphemePrefix(`ab${flag}`, 5)).toBe('ab');
    expect(graphemePrefix('cafe\u0301!', 4)).toBe('caf');
    expect(graphemePrefix('cafe\u0301!', 5)).toBe('cafe\u0301');
  });

  it('ends a shortened text with an ellipsis, within the length', () => {
    const prompt = '🐉'.repeat(990);
    const short = shorten(prompt, 100);
    expect(short.length).toBeLessThanOrEqual(100);
    expect(short).toBe(`${'🐉'.repeat(49)}…`);
    expect(shorten('a long prompt about dragons', 10)).toBe('a long pr…');
  });
});

describe('splitText', () => {
  it('keeps a text that fits whole', () => {
    expect(splitText('short', 10)).toEqual(['short']);
    expect(splitText('', 10)).toEqual(['']);
  });

  it('splits at a space or a line break in the second half of a piece, losing nothing', () => {
    const text = `${'word '.repeat(500)}end`;
    const pieces = splitText(text, 2000);
    expect(pieces.join('')).toBe(text);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(2000);
    expect(pieces.slice(0, -1).every((piece) => piece.endsWith(' '))).toBe(true);
  });

  it('splits a text without spaces between whole emoji', () => {
    const text = '👩🏽‍🚀'.repeat(700);
    const pieces = splitText(text, 2000);
    expect(pieces.join('')).toBe(text);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(2000);
      expect(piece.length % '👩🏽‍🚀'.length).toBe(0);
    }
  });
});
