// A server's blocked words (issue 36): which of the moderators' rules a prompt contains. Pure, and built for
// the check to run on every prompt: the rules are compiled once per rule set, and a prompt is folded once
// and walked once, whatever the number of rules (no expression per rule).
//
// Matching: whole words and phrases, in any case, with accents, width and compatibility forms folded, and
// punctuation and runs of spaces counting as one space: "DRAGON!" and "Dragón" match `dragon`, "red-dragon"
// matches `red dragon`, "dragonfly" does not match `dragon`. A rule ending in `*` matches the start of a word
// (`dragon*` matches "dragonfly"). A rule written in a script that puts no spaces between words (Chinese,
// Japanese, Thai...) matches anywhere, as a part of a word, spaces and punctuation ignored: there, a word's
// end cannot be seen. A word of another script ends where such a script starts ("赤いdragonが" holds the
// word "dragon"), and characters that show nothing (a soft hyphen, a zero-width space) are not seen at all,
// so "drag\u00ADon" is "dragon". Korean spaces its words but writes its particles on to them: a word rule
// also matches a word that goes on with Korean particles alone ("드래곤이", "드래곤에서는" match `드래곤`,
// "dragon이" matches `dragon`; "드래곤플라이" does not).

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

/**
 * A trie of folded rules, one UTF-16 unit a level, flattened into arrays for the walk (node 0 is the root, so
 * 0 is no node).
 */
interface RuleTrie {
  /** The units the rules start with, a bit each: the first look at a unit. */
  readonly firstUnits: Uint32Array;
  /** The node of a rule's first unit: for ASCII, an array read (the first step of most walks). */
  readonly asciiFirst: Int32Array;
  readonly otherFirst: ReadonlyMap<number, number>;
  /** Node n's children: `edgeUnits` and `edgeNodes` from `edgesFrom[n]` to `edgesFrom[n + 1]`. */
  readonly edgesFrom: Int32Array;
  readonly edgeUnits: Uint16Array;
  readonly edgeNodes: Int32Array;
  /** Per node, the index in `rules` of the rule that ends there (-1: none): one that needs the word to end there too. */
  readonly wordRule: Int32Array;
  /** The same for a `*` rule: any word going on from there matches. */
  readonly prefixRule: Int32Array;
  readonly rules: readonly string[];
}

/** A rule set compiled for `blockedWordIn()`: build it once per set, the check runs on every prompt. */
export interface BlockedWords {
  /** Word, phrase and prefix rules, by their folded text (a space between words), matched from a word's start. */
  readonly words: RuleTrie;
  /** Rules in scripts without spaces, by their folded text without spaces, matched anywhere. */
  readonly substrings: RuleTrie;
}

/** Scripts that write words without spaces between them. */
const WITHOUT_SPACES =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
const WORD_CHARACTER = /[\p{L}\p{M}\p{N}]/u;
/** Characters that show nothing (soft hyphen, zero-width spaces and joiners, variation selectors): dropped. */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;
const MARK = /\p{M}/u;
/** Hangul letters that compose into syllables (NFKC puts them together). */
const HANGUL_JAMO = /[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff\uffa0-\uffdc]/u;
const SPACE = 0x20;
const HANGUL_SYLLABLES = { first: 0xac00, last: 0xd7a3 } as const;

/**
 * Korean particles: case, topic and auxiliary markers a noun takes on, written without a space (a closed
 * set, so that a rule is not matched inside a longer noun), and the copula's commonest forms.
 */
const KOREAN_PARTICLES = [
  // Case and topic markers, then auxiliary particles, then the copula.
  '이 가 은 는 을 를 의 에 에서 에게 께 께서 한테 와 과 랑 이랑 하고',
  '도 만 로 으로 까지 부터 처럼 보다 이나 나 마다 조차 요',
  '이다 입니다 이에요 예요 이야',
]
  .flatMap((line) => line.split(' '))
  .map((particle) => Array.from(particle, (syllable) => syllable.charCodeAt(0)));
/** A word may go on with this many particles at most ("에서" + "는"). */
const MOST_PARTICLES = 3;

function isHangulSyllable(unit: number): boolean {
  return unit >= HANGUL_SYLLABLES.first && unit <= HANGUL_SYLLABLES.last;
}

/** Whether the word going on at `from` of the folded prompt is Korean particles alone, to its end. */
function onlyParticlesFrom(units: Uint16Array, length: number, from: number, left = MOST_PARTICLES): boolean {
  if (from === length || units[from] === SPACE) return true;
  if (left === 0 || !isHangulSyllable(units[from]!)) return false;
  return KOREAN_PARTICLES.some(
    (particle) =>
      from + particle.length <= length &&
      particle.every((syllable, offset) => units[from + offset] === syllable) &&
      onlyParticlesFrom(units, length, from + particle.length, left - 1),
  );
}
const UTF16_UNITS = 0x10000;
const ASCII_UNITS = 0x80;

/** The Combining Diacritical Marks blocks: the accents that folding drops. */
function isAccent(unit: number): boolean {
  return (
    (unit >= 0x0300 && unit <= 0x036f) ||
    (unit >= 0x1ab0 && unit <= 0x1aff) ||
    (unit >= 0x1dc0 && unit <= 0x1dff) ||
    (unit >= 0x20d0 && unit <= 0x20ff) ||
    (unit >= 0xfe20 && unit <= 0xfe2f)
  );
}

/**
 * One character folded as rules and prompts are compared: letters, marks and digits kept, anything else a
 * space. NFKC folds width and compatibility forms (full-width "Ｄ", the ligature "ﬁ", half-width kana);
 * upper then lower case is JavaScript's nearest to Unicode case folding ("ß" folds to "ss", the final sigma
 * to a sigma). Accents are folded the usual way, decomposing (NFKD), dropping the combining accents (the
 * Combining Diacritical Marks blocks) and composing again, so "Dragón" matches `dragon`; the marks that make
 * letters of other scripts (the kana voicing marks, Thai vowels, Indic vowel signs) are not accents and stay,
 * so "ガ" is not "カ".
 */
function foldCharacter(character: string): string {
  const decomposed = character.replace(INVISIBLE, '').normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKD');
  let kept = '';
  for (const unit of decomposed) if (!isAccent(unit.charCodeAt(0))) kept += WORD_CHARACTER.test(unit) ? unit : ' ';
  return kept.normalize('NFC');
}

// What each UTF-16 unit folds to, worked out the first time it is met: a table, so that folding a prompt is
// one pass of array reads. A positive entry is the one unit it folds to (a space for anything not a letter,
// mark or digit), with `WITHOUT_SPACES_FLAG` for a letter of a script without spaces; 0 is not known yet.
const NOT_KNOWN = 0;
const WITHOUT_SPACES_FLAG = 0x10000;
const DROPPED = -1;
/** Folds to several units (`FOLDED_TEXT`). */
const SEVERAL_UNITS = -2;
const SURROGATE = -3;
/** Composes with the unit before it (a combining mark, a Hangul jamo): a prompt holding one is NFKC-normalized whole first. */
const COMPOSES = -4;
const foldTable = new Int32Array(UTF16_UNITS);
/** What a unit folds to when it is not one unit: for one that composes, what is left of it once normalized. */
const FOLDED_TEXT = new Map<number, string>();

function learnUnit(unit: number): number {
  foldTable[unit] = unitFold(unit);
  return foldTable[unit];
}

function unitFold(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return SURROGATE;
  const character = String.fromCharCode(unit);
  const folded = foldCharacter(character);
  if (folded !== '' && (MARK.test(character.normalize('NFKC')) || HANGUL_JAMO.test(character))) {
    FOLDED_TEXT.set(unit, folded);
    return COMPOSES;
  }
  if (folded === '') return DROPPED;
  if (folded.trim() === '') return SPACE;
  if (folded.length === 1) return folded.charCodeAt(0) | (WITHOUT_SPACES.test(folded) ? WITHOUT_SPACES_FLAG : 0);
  FOLDED_TEXT.set(unit, folded);
  return SEVERAL_UNITS;
}

/**
 * A folded text: UTF-16 units, one space between words (none at the start), and where its words start with a
 * unit a rule starts with; buffers reused from prompt to prompt (the check is synchronous).
 */
interface Folded {
  units: Uint16Array;
  length: number;
  /** Whether it holds a letter of a script without spaces. */
  withoutSpaces: boolean;
  wordStarts: Uint32Array;
  wordStartCount: number;
}

const folded: Folded = {
  units: new Uint16Array(4096),
  length: 0,
  withoutSpaces: false,
  wordStarts: new Uint32Array(1024),
  wordStartCount: 0,
};

function makeRoom(units: number): void {
  if (folded.length + units <= folded.units.length) return;
  const grown = new Uint16Array(Math.max(folded.units.length * 2, folded.length + units));
  grown.set(folded.units.subarray(0, folded.length));
  folded.units = grown;
}

function noteWordStart(at: number): void {
  if (folded.wordStartCount === folded.wordStarts.length) {
    const grown = new Uint32Array(folded.wordStarts.length * 2);
    grown.set(folded.wordStarts);
    folded.wordStarts = grown;
  }
  folded.wordStarts[folded.wordStartCount++] = at;
}

/** Whether a folded unit is a letter of a script without spaces (a surrogate, of a rare Han character, counts as not). */
function withoutSpaces(unit: number): boolean {
  const fold = foldTable[unit] === NOT_KNOWN ? learnUnit(unit) : foldTable[unit]!;
  return fold > WITHOUT_SPACES_FLAG;
}

/** The slow way, for a unit that folds to several: one at a time. */
function appendText(text: string, trie: RuleTrie): void {
  if (WITHOUT_SPACES.test(text)) folded.withoutSpaces = true;
  makeRoom(text.length);
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    const previous = folded.length === 0 ? SPACE : folded.units[folded.length - 1]!;
    if (unit === SPACE && previous === SPACE) continue;
    if (unit !== SPACE && previous !== SPACE && withoutSpaces(unit) !== withoutSpaces(previous)) {
      makeRoom(text.length - index + 1);
      folded.units[folded.length++] = SPACE;
      index--;
      continue;
    }
    if (unit !== SPACE && previous === SPACE && startsRule(trie, unit)) noteWordStart(folded.length);
    folded.units[folded.length++] = unit;
  }
}

/**
 * Folds `text` into the shared buffers, noting the words that start with a unit a rule of `trie` starts with; false when,
 * not `normalized`, it met a unit that composes with the one before it (the text is to be normalized first).
 */
function foldInto(text: string, normalized: boolean, trie: RuleTrie): boolean {
  return BEYOND_LATIN1.test(text) ? foldWideInto(text, normalized, trie) : foldLatin1Into(text, normalized, trie);
}

// The same loop twice, one for texts of Latin-1 characters only and one for the others: V8 keeps the two
// kinds of strings apart, and one loop reading both ran long Latin prompts at half the speed (the benchmark).
const BEYOND_LATIN1 = /[\u0100-\uffff]/;

function foldLatin1Into(text: string, normalized: boolean, trie: RuleTrie): boolean {
  folded.length = 0;
  folded.withoutSpaces = false;
  folded.wordStartCount = 0;
  makeRoom(text.length);
  // The hot loop works on locals (most units fold to one unit or a space); the rest goes through `folded`.
  let units = folded.units;
  let length = 0;
  let previous = SPACE;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    let fold = foldTable[unit]!;
    if (fold === NOT_KNOWN) fold = learnUnit(unit);
    if (fold === SPACE) {
      if (previous !== SPACE) units[length++] = previous = SPACE;
    } else if (fold > 0) {
      if (fold > WITHOUT_SPACES_FLAG) {
        folded.withoutSpaces = true;
        fold -= WITHOUT_SPACES_FLAG;
      }
      if (previous === SPACE && startsRule(trie, fold)) {
        folded.length = length;
        noteWordStart(length);
      }
      units[length++] = previous = fold;
    } else if (fold === COMPOSES && !normalized) {
      return false;
    } else if (fold !== DROPPED) {
      folded.length = length;
      const codePoint = text.codePointAt(index)!;
      // A surrogate pair's character folds on its own (rare in prompts: emoji, rare Han characters).
      if (fold === SURROGATE) {
        if (codePoint > 0xffff) index++;
        appendText(codePoint > 0xffff ? foldCharacter(String.fromCodePoint(codePoint)) : ' ', trie);
      } else appendText(FOLDED_TEXT.get(unit)!, trie);
      makeRoom(text.length - index);
      units = folded.units;
      length = folded.length;
      previous = length === 0 ? SPACE : units[length - 1]!;
    }
  }
  folded.length = length;
  return true;
}

/** `foldLatin1Into()` for texts beyond Latin-1. */
function foldWideInto(text: string, normalized: boolean, trie: RuleTrie): boolean {
  folded.length = 0;
  folded.withoutSpaces = false;
  folded.wordStartCount = 0;
  makeRoom(text.length);
  // The hot loop works on locals (most units fold to one unit or a space); the rest goes through `folded`.
  let units = folded.units;
  let length = 0;
  let previous = SPACE;
  /** Whether the last unit is a letter of a script without spaces. */
  let previousWithout = false;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    let fold = foldTable[unit]!;
    if (fold === NOT_KNOWN) fold = learnUnit(unit);
    if (fold === SPACE) {
      if (previous !== SPACE) units[length++] = previous = SPACE;
    } else if (fold > 0) {
      const without = fold > WITHOUT_SPACES_FLAG;
      if (without) {
        folded.withoutSpaces = true;
        fold -= WITHOUT_SPACES_FLAG;
      }
      // A word of a spaced script ends where a script without spaces starts, and starts where it ends.
      if (previous !== SPACE && without !== previousWithout) {
        folded.length = length;
        makeRoom(text.length - index + 1);
        units = folded.units;
        units[length++] = previous = SPACE;
      }
      previousWithout = without;
      if (previous === SPACE && startsRule(trie, fold)) {
        folded.length = length;
        noteWordStart(length);
      }
      units[length++] = previous = fold;
    } else if (fold === COMPOSES && !normalized) {
      return false;
    } else if (fold !== DROPPED) {
      folded.length = length;
      const codePoint = text.codePointAt(index)!;
      // A surrogate pair's character folds on its own (rare in prompts: emoji, rare Han characters).
      if (fold === SURROGATE) {
        if (codePoint > 0xffff) index++;
        appendText(codePoint > 0xffff ? foldCharacter(String.fromCodePoint(codePoint)) : ' ', trie);
      } else appendText(FOLDED_TEXT.get(unit)!, trie);
      makeRoom(text.length - index);
      units = folded.units;
      length = folded.length;
      previous = length === 0 ? SPACE : units[length - 1]!;
      previousWithout = previous !== SPACE && withoutSpaces(previous);
    }
  }
  folded.length = length;
  return true;
}

/** `text` folded (see `foldCharacter()`) into the shared buffers, noting the words a rule of `trie` may start at. */
function fold(text: string, trie: RuleTrie): Folded {
  if (!foldInto(text, false, trie)) foldInto(text.normalize('NFKC'), true, trie);
  return folded;
}

const NO_RULES = flatten(newNode(), []);

/** `text` folded as rules and prompts are compared: letters, marks and digits, one space between words. */
export function foldForBlockedWords(text: string): string {
  const { units, length } = fold(text, NO_RULES);
  let result = '';
  for (let index = 0; index < length; index++) result += String.fromCharCode(units[index]!);
  return result.trimEnd();
}

/** A rule's folded text (no space at either end) and whether it is a prefix (`*` at its end). */
function ruleBody(rule: string): { text: string; prefix: boolean } {
  const written = rule.trim();
  const prefix = written.endsWith('*');
  return { text: foldForBlockedWords(prefix ? written.slice(0, -1) : written), prefix };
}

/**
 * What a rule blocks, as a key: two rules with one key ("Dragon!" and `dragon`) block the same prompts, so
 * a set keeps one of them, and either removes it.
 */
export function blockedWordKey(rule: string): string {
  const { text, prefix } = ruleBody(rule);
  // As compileBlockedWords() keeps them: a rule of a script without spaces matches anywhere, its spaces left out.
  if (WITHOUT_SPACES.test(text)) return text.replaceAll(' ', '');
  return prefix ? `${text}*` : text;
}

interface BuildNode {
  children: Map<number, BuildNode>;
  word?: number;
  prefix?: number;
}

function newNode(): BuildNode {
  return { children: new Map() };
}

function insert(root: BuildNode, text: string, rule: number, prefix: boolean): void {
  let node = root;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    let child = node.children.get(unit);
    if (!child) node.children.set(unit, (child = newNode()));
    node = child;
  }
  // The first of two rules with the same folded text is the one named.
  if (prefix) node.prefix ??= rule;
  else node.word ??= rule;
}

function flatten(root: BuildNode, rules: readonly string[]): RuleTrie {
  const nodes = [root];
  for (let index = 0; index < nodes.length; index++)
    nodes.push(...[...nodes[index]!.children.entries()].sort(([a], [b]) => a - b).map(([, node]) => node));
  const ids = new Map(nodes.map((node, id) => [node, id]));
  const edgesFrom = new Int32Array(nodes.length + 1);
  const edgeUnits = new Uint16Array(nodes.length);
  const edgeNodes = new Int32Array(nodes.length);
  const wordRule = new Int32Array(nodes.length).fill(-1);
  const prefixRule = new Int32Array(nodes.length).fill(-1);
  let edge = 0;
  nodes.forEach((node, id) => {
    edgesFrom[id] = edge;
    for (const [unit, child] of [...node.children.entries()].sort(([a], [b]) => a - b)) {
      edgeUnits[edge] = unit;
      edgeNodes[edge++] = ids.get(child)!;
    }
    wordRule[id] = node.word ?? -1;
    prefixRule[id] = node.prefix ?? -1;
  });
  edgesFrom[nodes.length] = edge;
  const asciiFirst = new Int32Array(ASCII_UNITS);
  const otherFirst = new Map<number, number>();
  for (const [unit, child] of root.children) {
    if (unit < ASCII_UNITS) asciiFirst[unit] = ids.get(child)!;
    else otherFirst.set(unit, ids.get(child)!);
  }
  const firstUnits = new Uint32Array(UTF16_UNITS / 32);
  for (const unit of root.children.keys()) firstUnits[unit >>> 5]! |= 1 << (unit & 31);
  return { firstUnits, asciiFirst, otherFirst, edgesFrom, edgeUnits, edgeNodes, wordRule, prefixRule, rules };
}

function startsRule(trie: RuleTrie, unit: number): boolean {
  return ((trie.firstUnits[unit >>> 5]! >>> (unit & 31)) & 1) === 1;
}

function firstNode(trie: RuleTrie, unit: number): number {
  return unit < ASCII_UNITS ? trie.asciiFirst[unit]! : (trie.otherFirst.get(unit) ?? 0);
}

/** Compiles `rules`; a rule that folds to nothing (refused by `blockedWordsRefusals()`) is left out. */
export function compileBlockedWords(rules: readonly string[]): BlockedWords {
  const words = newNode();
  const substrings = newNode();
  rules.forEach((rule, index) => {
    const { text, prefix } = ruleBody(rule);
    if (text === '') return;
    if (WITHOUT_SPACES.test(text)) insert(substrings, text.replaceAll(' ', ''), index, false);
    else insert(words, text, index, prefix);
  });
  return { words: flatten(words, rules), substrings: flatten(substrings, rules) };
}

/** The child of `node` by `unit`, 0 for none. */
function childOf(trie: RuleTrie, node: number, unit: number): number {
  const end = trie.edgesFrom[node + 1]!;
  for (let edge = trie.edgesFrom[node]!; edge < end; edge++) if (trie.edgeUnits[edge] === unit) return trie.edgeNodes[edge]!;
  return 0;
}

/** The word, phrase or prefix rule that matches from the word starting at `start` of the folded prompt, if one does. */
function wordRuleAt(trie: RuleTrie, units: Uint16Array, length: number, start: number): string | undefined {
  let node = firstNode(trie, units[start]!);
  for (let index = start + 1; node !== 0; index++) {
    const prefix = trie.prefixRule[node]!;
    if (prefix >= 0) return trie.rules[prefix];
    const word = trie.wordRule[node]!;
    if (word >= 0 && (index === length || units[index] === SPACE)) return trie.rules[word];
    if (word >= 0 && isHangulSyllable(units[index]!) && onlyParticlesFrom(units, length, index)) return trie.rules[word];
    if (index === length) return undefined;
    node = childOf(trie, node, units[index]!);
  }
  return undefined;
}

/**
 * The rule of a script without spaces that matches from `start` of the folded prompt, its spaces taken out,
 * if one does. (Apart from `wordRuleAt()`, so that V8 optimizes each for the prompts that reach it.)
 */
function substringRuleAt(trie: RuleTrie, units: Uint16Array, length: number, start: number): string | undefined {
  let node = firstNode(trie, units[start]!);
  for (let index = start + 1; node !== 0; index++) {
    const rule = trie.wordRule[node]!;
    if (rule >= 0) return trie.rules[rule];
    if (index === length) return undefined;
    node = childOf(trie, node, units[index]!);
  }
  return undefined;
}

/** The first rule of a script without spaces in the folded prompt, its spaces taken out (in place). */
function substringRuleIn(trie: RuleTrie, units: Uint16Array, length: number): string | undefined {
  let joined = 0;
  for (let index = 0; index < length; index++) if (units[index] !== SPACE) units[joined++] = units[index]!;
  for (let start = 0; start < joined; start++) {
    if (!startsRule(trie, units[start]!)) continue;
    const rule = substringRuleAt(trie, units, joined, start);
    if (rule !== undefined) return rule;
  }
  return undefined;
}

/** The first rule (as the moderators wrote it) that `prompt` contains, or undefined when it contains none. */
export function blockedWordIn(compiled: BlockedWords, prompt: string): string | undefined {
  const { words, substrings } = compiled;
  const { units, length, withoutSpaces, wordStarts, wordStartCount } = fold(prompt, words);
  for (let index = 0; index < wordStartCount; index++) {
    const rule = wordRuleAt(words, units, length, wordStarts[index]!);
    if (rule !== undefined) return rule;
  }
  // Spaces and punctuation are not seen in scripts without spaces.
  return withoutSpaces && substrings.edgesFrom[1]! > 0 ? substringRuleIn(substrings, units, length) : undefined;
}
