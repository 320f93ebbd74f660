// A server's blocked words (issue 36): which of the moderators' rules a prompt contains. Pure, and built for
// the check to run on every prompt: the rules are compiled once per rule set, and a prompt is folded once
// and walked once, whatever the number of rules (no expression per rule).
//
// Matching: whole words and phrases, in any case, with accents, width and compatibility forms folded, and
// punctuation and runs of spaces counting as one space: "DRAGON!" and "Dragón" match `dragon`, "red-dragon"
// matches `red dragon`, "dragonfly" does not match `dragon`. A rule ending in `*` matches the start of a word
// (`dragon*` matches "dragonfly"). A rule written in a script that puts no spaces between words (Chinese,
// Japanese, Thai...) matches anywhere, as a part of a word, spaces and punctuation ignored: there, a word's
// end cannot be seen.

/** The limits a rule set is held to (the /config option refuses past them). */
export const BLOCKED_WORDS_LIMITS = { rules: 200, ruleCharacters: 60 } as const;

/** Why a rule set is refused, as data: the option words it. */
export type BlockedWordsRefusal =
  | { limit: 'rules'; count: number; max: number }
  | { limit: 'rule-characters'; rule: string; characters: number; max: number }
  | { limit: 'rule-empty'; rule: string };

/** Everything that refuses `rules`, in the order written (none: the set may be kept). */
export function blockedWordsRefusals(rules: readonly string[]): BlockedWordsRefusal[] {
  const refusals: BlockedWordsRefusal[] = [];
  if (rules.length > BLOCKED_WORDS_LIMITS.rules) refusals.push({ limit: 'rules', count: rules.length, max: BLOCKED_WORDS_LIMITS.rules });
  for (const rule of rules) {
    // Characters as a reader counts them: an emoji or a letter outside the BMP is one.
    const characters = [...rule.trim()].length;
    if (characters > BLOCKED_WORDS_LIMITS.ruleCharacters)
      refusals.push({ limit: 'rule-characters', rule, characters, max: BLOCKED_WORDS_LIMITS.ruleCharacters });
    else if (ruleBody(rule).text === '') refusals.push({ limit: 'rule-empty', rule });
  }
  return refusals;
}

interface TrieNode {
  children: Map<number, TrieNode>;
  /** A rule that ends here and needs the word to end here too. */
  word?: string;
  /** A `*` rule that ends here: any word going on from here matches. */
  prefix?: string;
}

/** A rule set compiled for `blockedWordIn()`: build it once per set, the check runs on every prompt. */
export interface BlockedWords {
  /** Word, phrase and prefix rules, by their folded text, one character a level (a space between words). */
  readonly words: TrieNode;
  /** Rules in scripts without spaces, their folded text without spaces, matched anywhere. */
  readonly substrings: readonly { text: string; rule: string }[];
}

/** Scripts that write words without spaces between them. */
const WITHOUT_SPACES =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
/** The accents of a decomposed Latin or Greek letter: the combining marks right after it. */
const ACCENTS = /(?<=[\p{Script=Latin}\p{Script=Greek}])\p{Mn}+/gu;
const NOT_WORD = /[^\p{L}\p{M}\p{N}]+/gu;
const NOT_ASCII = /\P{ASCII}/u;
const NOT_ASCII_WORD = /[^a-z0-9]+/g;
const SPACE = 0x20;

/**
 * `text` folded as rules and prompts are compared: letters, marks and digits kept, and every run of anything
 * else one space.
 *
 * NFKC folds width and compatibility forms (full-width "ＤＲＡＧＯＮ", the ligature "ﬁ", half-width kana);
 * upper then lower case is JavaScript's nearest to Unicode case folding ("ß" folds to "ss"; the final
 * sigma is made a sigma). Accents are folded by decomposing (NFKD), dropping the combining marks that follow
 * a Latin or Greek letter, and composing again: "Dragón" matches `dragon`, while the marks that make letters
 * of other scripts (the kana voicing marks, Thai vowels, Indic vowel signs, the Cyrillic "й") are kept, so
 * "ガ" stays apart from "カ". Plain ASCII, most prompts, skips the normalizations, which change nothing there.
 */
export function foldForBlockedWords(text: string): string {
  if (!NOT_ASCII.test(text)) return text.toLowerCase().replace(NOT_ASCII_WORD, ' ');
  return text
    .normalize('NFKC')
    .toUpperCase()
    .toLowerCase()
    .replaceAll('ς', 'σ')
    .normalize('NFKD')
    .replace(ACCENTS, '')
    .normalize('NFC')
    .replace(NOT_WORD, ' ');
}

/** A rule's folded text (no space at either end) and whether it is a prefix (`*` at its end). */
function ruleBody(rule: string): { text: string; prefix: boolean } {
  const written = rule.trim();
  const prefix = written.endsWith('*');
  return { text: foldForBlockedWords(prefix ? written.slice(0, -1) : written).trim(), prefix };
}

function newNode(): TrieNode {
  return { children: new Map() };
}

/** Compiles `rules`; a rule that folds to nothing (refused by `blockedWordsRefusals()`) is left out. */
export function compileBlockedWords(rules: readonly string[]): BlockedWords {
  const words = newNode();
  const substrings: { text: string; rule: string }[] = [];
  for (const rule of rules) {
    const { text, prefix } = ruleBody(rule);
    if (text === '') continue;
    if (WITHOUT_SPACES.test(text)) {
      substrings.push({ text: text.replaceAll(' ', ''), rule });
      continue;
    }
    let node = words;
    for (let index = 0; index < text.length; index++) {
      const code = text.charCodeAt(index);
      let child = node.children.get(code);
      if (!child) node.children.set(code, (child = newNode()));
      node = child;
    }
    // The first of two rules with the same folded text is the one named.
    if (prefix) node.prefix ??= rule;
    else node.word ??= rule;
  }
  return { words, substrings };
}

/** The rule that matches the words starting at `start` of the folded prompt, if one does. */
function ruleAt(words: TrieNode, folded: string, start: number): string | undefined {
  let node = words;
  for (let index = start; ; index++) {
    if (node.prefix !== undefined) return node.prefix;
    if (node.word !== undefined && (index === folded.length || folded.charCodeAt(index) === SPACE)) return node.word;
    if (index === folded.length) return undefined;
    const child = node.children.get(folded.charCodeAt(index));
    if (!child) return undefined;
    node = child;
  }
}

/** The first rule (as the moderators wrote it) that `prompt` contains, or undefined when it contains none. */
export function blockedWordIn(compiled: BlockedWords, prompt: string): string | undefined {
  const folded = foldForBlockedWords(prompt);
  if (compiled.words.children.size > 0) {
    // Every word's start: the folded text's first character, and each one after a space.
    for (let start = 0; start < folded.length;) {
      if (folded.charCodeAt(start) !== SPACE) {
        const rule = ruleAt(compiled.words, folded, start);
        if (rule !== undefined) return rule;
      }
      const space = folded.indexOf(' ', start);
      if (space < 0) break;
      start = space + 1;
    }
  }
  if (compiled.substrings.length > 0 && WITHOUT_SPACES.test(folded)) {
    const joined = folded.replaceAll(' ', '');
    for (const { text, rule } of compiled.substrings) if (joined.includes(text)) return rule;
  }
  return undefined;
}
