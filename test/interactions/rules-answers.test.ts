import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMITS } from '../../src/discord/message-limits.ts';
import { ENGLISH, SUPPORTED_LOCALES, t } from '../../src/i18n/index.ts';
import { describePrices, describeRules, describeServerSettings, type ShownFacts } from '../../src/interactions/settings-answers.ts';
import { BLOCKED_WORDS_LIMITS } from '../../src/settings/blocked-words.ts';
import { defaultGuildSettings, noRules, type ServerRules } from '../../src/settings/guild-settings.ts';
import { DEFAULT_PRICES } from '../../src/settings/prices.ts';

// What /config says of the moderators' rules: one short line of `/config show` (counts, two channels, the log
// channel), and `/config rules` without options, the rules in full, in as many private messages as they take,
// each within Discord's 2,000 characters, in every language. /config show at its longest, rules included, is
// test/interactions/settings-answers.test.ts.

/** The rules at their largest: 200 words of 60 characters (phrases, with spaces), 100 channels and 300 denied members. */
function largestRules(): ServerRules {
  return {
    blockedWords: Array.from({ length: BLOCKED_WORDS_LIMITS.rules }, (_, index) =>
      `${String(index).padStart(3, '0')} ${'phrase '.repeat(9)}`.slice(0, BLOCKED_WORDS_LIMITS.ruleCharacters).trim(),
    ),
    videoChannels: Array.from({ length: 100 }, (_, index) => String(400000000000000000n + BigInt(index))),
    denied: Array.from({ length: 300 }, (_, index) => String(300000000000000000n + BigInt(index))),
    logChannelId: '400000000000000999',
  };
}

describe('/config rules without options', () => {
  it('says there are no rules in one message', () => {
    expect(describeRules(ENGLISH, noRules())).toEqual([
      [
        "**This server's rules** (`/config rules` changes them)",
        '**Blocked words and phrases** (0 of 200): none',
        '**Where /video and the message commands may be used:** every channel',
        '**Members denied the bot** (0): none',
        '**Log channel:** none',
      ].join('\n'),
    ]);
  });

  it('shows each word in code style, where no markdown or mention of it takes effect', () => {
    const [text] = describeRules(ENGLISH, {
      ...noRules(),
      blockedWords: ['dragon', 'red dragon', 'dragon*', '@everyone', 'a`b'],
      videoChannels: ['400000000000000001', '400000000000000002'],
      denied: ['300000000000000001'],
      logChannelId: '400000000000000003',
    });
    expect(text).toContain("**Blocked words and phrases** (5 of 200): `dragon`, `red dragon`, `dragon*`, `@everyone`, `a'b`");
    expect(text).toContain('**Where /video and the message commands may be used:** <#400000000000000001>, <#400000000000000002>');
    expect(text).toContain('**Members denied the bot** (1): <@300000000000000001>');
    expect(text).toContain('**Log channel:** <#400000000000000003>');
  });

  it.each(SUPPORTED_LOCALES)('shows the largest rules whole, each word, channel and member once, in messages that fit (%s)', (locale) => {
    const rules = largestRules();
    const messages = describeRules(locale, rules);
    for (const message of messages) expect(message.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    // 200 words of 62 characters in code style and 400 mentions: about 20,000 characters, in as few messages as that takes.
    expect(messages.length).toBeGreaterThanOrEqual(10);
    expect(messages.length).toBeLessThanOrEqual(13);
    const all = messages.join('\n');
    for (const word of rules.blockedWords) expect(all.split(`\`${word}\``)).toHaveLength(2);
    for (const id of rules.videoChannels) expect(all.split(`<#${id}>`)).toHaveLength(2);
    for (const id of rules.denied) expect(all.split(`<@${id}>`)).toHaveLength(2);
    expect(all).toContain(t(locale, 'config.rules.view.log'));
    // No message starts or ends with a separator: each ends between two items.
    for (const message of messages) expect(message).not.toMatch(/^[,、 ]|[,、 ]$/);
  });
});

describe('/config show', () => {
  const facts: ShownFacts = {
    hasKey: true,
    canStoreKeys: true,
    keyInUse: "this server's own key",
    defaultLayer: 'compat',
    prices: describePrices(DEFAULT_PRICES),
  };
  const rulesLine = (rules: Partial<ServerRules>) =>
    describeServerSettings(ENGLISH, { ...defaultGuildSettings(), rules: { ...noRules(), ...rules } }, facts)
      .split('\n')
      .find((line) => line.startsWith('**Rules:**'));

  it('shows the rules in one line of counts, the first two channels and the log channel', () => {
    expect(rulesLine({})).toBe('**Rules:** none');
    expect(rulesLine({ blockedWords: ['dragon', 'wyvern', 'drake'] })).toBe(
      '**Rules:** 3 blocked words; /video in every channel; no member denied; no log',
    );
    expect(rulesLine({ blockedWords: ['dragon'], videoChannels: ['400000000000000001'], denied: ['300000000000000001'] })).toBe(
      '**Rules:** 1 blocked word; /video only in <#400000000000000001>; 1 member denied; no log',
    );
    expect(
      rulesLine({
        blockedWords: Array.from({ length: 12 }, (_, index) => `word ${index}`),
        videoChannels: ['400000000000000001', '400000000000000002', '400000000000000003'],
        denied: ['300000000000000001', '300000000000000002'],
        logChannelId: '400000000000000009',
      }),
    ).toBe(
      '**Rules:** 12 blocked words; /video only in <#400000000000000001>, <#400000000000000002>, and 1 more channel; 2 members denied; log in <#400000000000000009>',
    );
  });

  it.each(SUPPORTED_LOCALES)('words the rules line in %s', (locale) => {
    const line = t(locale, 'config.show.rules', {
      words: 1,
      where: t(locale, 'config.show.rules-anywhere'),
      denied: 2,
      log: t(locale, 'config.show.rules-log', { channel: '<#400000000000000009>' }),
    });
    const text = describeServerSettings(
      locale,
      {
        ...defaultGuildSettings(),
        rules: { ...noRules(), blockedWords: ['dragon'], denied: ['1', '2'], logChannelId: '400000000000000009' },
      },
      facts,
    );
    expect(text.split('\n')).toContain(line);
  });
});
