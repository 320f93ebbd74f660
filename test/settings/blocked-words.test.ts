import { describe, expect, it } from 'vitest';
import { BLOCKED_WORDS_LIMITS, blockedWordIn, blockedWordsRefusals, compileBlockedWords } from '../../src/settings/blocked-words.ts';

// The blocked-words matcher as a moderator sees it: which prompts a rule set refuses, and which rule it
// names (as the moderator wrote it).

const matchOf = (rules: readonly string[], prompt: string) => blockedWordIn(compileBlockedWords(rules), prompt);

describe('blocked words: folding', () => {
  it.each([
    ['any case', 'A RED DRAGON over the sea'],
    ['accents', 'un Dragón rojo'],
    ['accents written as combining marks', 'a dragón'.normalize('NFD')],
    ['full-width letters', 'ＤＲＡＧＯＮ at dawn'],
    ['punctuation around the word', 'DRAGON!'],
    ['a quote and a comma', '"dragon", he said'],
  ])('matches %s', (_, prompt) => {
    expect(matchOf(['dragon'], prompt)).toBe('dragon');
  });

  it('folds ligatures, in the prompt and in the rule', () => {
    expect(matchOf(['fly'], 'a dragon ﬂy')).toBe('fly');
    expect(matchOf(['ﬁre'], 'FIRE breathing')).toBe('ﬁre');
  });

  it('folds accents in the rule too, and the German sharp s as "ss"', () => {
    expect(matchOf(['Dragón'], 'dragon')).toBe('Dragón');
    expect(matchOf(['straße'], 'STRASSE at night')).toBe('straße');
    expect(matchOf(['δρακος'], 'ένας ΔΡΆΚΟΣ!')).toBe('δρακος');
  });

  it('keeps the kana voicing marks: ガ is not カ', () => {
    expect(matchOf(['ガス'], 'カスタード')).toBeUndefined();
    expect(matchOf(['ガス'], 'ガスの炎')).toBe('ガス');
  });
});

describe('blocked words: whole words and phrases', () => {
  it('never matches a rule inside a longer word', () => {
    expect(matchOf(['dragon'], 'a dragonfly on a leaf')).toBeUndefined();
    expect(matchOf(['dragon'], 'snapdragon flowers')).toBeUndefined();
    expect(matchOf(['dragon'], 'dragons')).toBeUndefined();
  });

  it('matches a word at either end of the prompt', () => {
    expect(matchOf(['dragon'], 'dragon')).toBe('dragon');
    expect(matchOf(['dragon'], 'dragon in the sky')).toBe('dragon');
    expect(matchOf(['dragon'], 'the sky, the dragon')).toBe('dragon');
  });

  it('matches a phrase across repeated spaces and punctuation, not its words apart', () => {
    const rules = ['red dragon'];
    expect(matchOf(rules, 'a red   dragon')).toBe('red dragon');
    expect(matchOf(rules, 'a red-dragon')).toBe('red dragon');
    expect(matchOf(rules, 'RED.\nDRAGON')).toBe('red dragon');
    expect(matchOf(rules, 'a red and blue dragon')).toBeUndefined();
    expect(matchOf(rules, 'reddragon')).toBeUndefined();
    expect(matchOf(rules, 'a red dragonfly')).toBeUndefined();
  });

  it('finds a phrase after a false start on its first word', () => {
    expect(matchOf(['red dragon'], 'red red dragon')).toBe('red dragon');
  });
});

describe('blocked words: Korean, whose particles are written on to the word', () => {
  it('matches a Korean rule followed by particles, one or several', () => {
    expect(matchOf(['드래곤'], '하늘을 나는 드래곤이 보인다')).toBe('드래곤');
    expect(matchOf(['드래곤'], '드래곤을 그려 줘')).toBe('드래곤');
    expect(matchOf(['드래곤'], '성의 드래곤에서는 불이 나온다')).toBe('드래곤');
    expect(matchOf(['붉은 드래곤'], '붉은 드래곤과 기사')).toBe('붉은 드래곤');
    expect(matchOf(['드래곤'], '드래곤입니다')).toBe('드래곤');
  });

  it('never matches a Korean rule inside a longer noun', () => {
    expect(matchOf(['드래곤'], '드래곤플라이가 날아간다')).toBeUndefined();
    expect(matchOf(['사과'], '사과나무 아래에서')).toBeUndefined();
    expect(matchOf(['드래곤'], '스냅드래곤 꽃')).toBeUndefined();
  });

  it('matches an English rule with particles written on to it, as Korean writes English words', () => {
    expect(matchOf(['dragon'], 'dragon이 날아간다')).toBe('dragon');
    expect(matchOf(['dragon'], 'dragons이 날아간다')).toBeUndefined();
    expect(matchOf(['dragon*'], 'dragonfly를 그려 줘')).toBe('dragon*');
  });
});

describe('blocked words: prefixes', () => {
  it('matches a word starting with the rule, and the word itself', () => {
    expect(matchOf(['dragon*'], 'a dragonfly')).toBe('dragon*');
    expect(matchOf(['dragon*'], 'Dragons!')).toBe('dragon*');
    expect(matchOf(['dragon*'], 'one dragon')).toBe('dragon*');
  });

  it('matches only at the start of a word', () => {
    expect(matchOf(['dragon*'], 'snapdragon')).toBeUndefined();
    expect(matchOf(['dragon*'], 'drago')).toBeUndefined();
  });

  it('ends a phrase with a prefix', () => {
    expect(matchOf(['red drag*'], 'the red dragons')).toBe('red drag*');
    expect(matchOf(['red drag*'], 'the redder dragons')).toBeUndefined();
  });
});

describe('blocked words: scripts without spaces', () => {
  it('matches a Japanese rule inside a longer run of text', () => {
    expect(matchOf(['ドラゴン'], '赤いドラゴンの絵')).toBe('ドラゴン');
    expect(matchOf(['ドラゴン'], '赤い龍の絵')).toBeUndefined();
  });

  it('folds half-width kana and ignores spaces and punctuation between the characters', () => {
    expect(matchOf(['ドラゴン'], 'ﾄﾞﾗｺﾞﾝを描いて')).toBe('ドラゴン');
    expect(matchOf(['赤いドラゴン'], '赤い、ドラゴン')).toBe('赤いドラゴン');
  });

  it('matches Chinese and Thai rules as part of a word', () => {
    expect(matchOf(['龙'], '一条红色的龙在飞')).toBe('龙');
    expect(matchOf(['มังกร'], 'ภาพมังกรสีแดง')).toBe('มังกร');
  });

  it('keeps matching words of spaced scripts as whole words beside them', () => {
    const rules = ['ドラゴン', 'dragon'];
    expect(matchOf(rules, 'ドラゴンフライ')).toBe('ドラゴン');
    expect(matchOf(rules, 'dragonfly と 蝶')).toBeUndefined();
  });

  it('ends a word of a spaced script where a script without spaces starts, as Japanese writes English words', () => {
    expect(matchOf(['dragon'], '赤いdragonが飛ぶ')).toBe('dragon');
    expect(matchOf(['ＤＲＡＧＯＮ'], '赤いＤｒａｇｏｎの絵')).toBe('ＤＲＡＧＯＮ');
    expect(matchOf(['red dragon'], '空にred dragonが')).toBe('red dragon');
    expect(matchOf(['dragon*'], 'あのdragonflyを')).toBe('dragon*');
    // Still whole words: a longer one is not the rule.
    expect(matchOf(['dragon'], '赤いdragonflyが')).toBeUndefined();
  });
});

describe('blocked words: characters that show nothing', () => {
  it.each([
    ['a soft hyphen', 'drag\u00ADon'],
    ['a zero-width space', 'dra\u200Bgon'],
    ['a zero-width joiner', 'd\u200Dragon'],
    ['a word joiner', 'drag\u2060on'],
  ])('are not seen inside a word: %s', (_, prompt) => {
    expect(matchOf(['dragon'], `a ${prompt} at dawn`)).toBe('dragon');
  });

  it('are not seen inside a Japanese rule either, nor do they join two words', () => {
    expect(matchOf(['ドラゴン'], 'ド\u200Bラゴン')).toBe('ドラゴン');
    expect(matchOf(['red dragon'], 'red\u200B dragon')).toBe('red dragon');
  });
});

describe('blocked words: which rule is named', () => {
  it('names the rule as the moderator wrote it, not its folded form', () => {
    expect(matchOf(['  Red   DRAGON '], 'a red dragon')).toBe('  Red   DRAGON ');
    expect(matchOf(['cat', 'Ｄｒａｇóｎ*'], 'DRAGONS')).toBe('Ｄｒａｇóｎ*');
  });

  it('names the first rule the prompt contains, in the order of the prompt', () => {
    expect(matchOf(['sea', 'dragon'], 'a dragon over the sea')).toBe('dragon');
  });

  it('matches nothing with no rules, or an empty prompt', () => {
    expect(matchOf([], 'a dragon')).toBeUndefined();
    expect(matchOf(['dragon'], '')).toBeUndefined();
    expect(matchOf(['dragon'], '!!!   ')).toBeUndefined();
  });

  it('leaves out a rule that folds to nothing', () => {
    expect(matchOf(['*', '!!', 'dragon'], 'a dragon')).toBe('dragon');
    expect(matchOf(['*'], 'anything at all')).toBeUndefined();
  });
});

describe('blocked words: limits', () => {
  it('keeps a set within the limits', () => {
    const rules = Array.from({ length: BLOCKED_WORDS_LIMITS.rules }, (_, index) => `word${index}`);
    rules.push('x'.repeat(BLOCKED_WORDS_LIMITS.ruleCharacters - 1) + '*');
    rules.shift();
    expect(blockedWordsRefusals(rules)).toEqual([]);
  });

  it('refuses more than 200 rules', () => {
    const rules = Array.from({ length: 201 }, (_, index) => `word${index}`);
    expect(blockedWordsRefusals(rules)).toEqual([{ limit: 'rules', count: 201, max: 200 }]);
  });

  it('refuses a rule longer than 60 characters, counting characters as read', () => {
    const long = 'a'.repeat(61);
    expect(blockedWordsRefusals(['dragon', long])).toEqual([{ limit: 'rule-characters', rule: long, characters: 61, max: 60 }]);
    // 60 emoji are 120 UTF-16 units, and 60 characters.
    expect(blockedWordsRefusals(['🐉'.repeat(59) + 'a'])).toEqual([]);
  });

  it('refuses a rule that folds to nothing, naming it', () => {
    expect(blockedWordsRefusals(['dragon', ' *', '?!', '🐉'])).toEqual([
      { limit: 'rule-empty', rule: ' *' },
      { limit: 'rule-empty', rule: '?!' },
      { limit: 'rule-empty', rule: '🐉' },
    ]);
  });
});
