import { describe, expect, it } from 'vitest';
import { ENGLISH, SUPPORTED_LOCALES, resolveLocale } from '../../src/i18n/index.ts';
import { BLOCKED_WORDS_LIMITS } from '../../src/settings/blocked-words.ts';
import { changesRules, parseBlockedWords, rulesChange, type RulesContext, type RulesGiven } from '../../src/settings/config-options.ts';
import { defaultGuildSettings, noRules, type GuildSettings, type ServerRules } from '../../src/settings/guild-settings.ts';
import { word } from '../../src/wording/notice.ts';

// `/config rules`: what it refuses (naming the option and the limit, in the admin's language), what it
// keeps, and the words the server's history records. What /config show says of the rules is
// test/interactions/settings-answers.test.ts.

const ADMIN = '300000000000000001';
const OWNER = '300000000000000002';
const MEMBER = '300000000000000003';
const TEXT = '400000000000000001';
const FORUM = '400000000000000002';
const VOICE = '400000000000000003';

function given(options: Partial<RulesGiven>): RulesGiven {
  return {
    blockedWordsAdd: null,
    blockedWordsRemove: null,
    blockedWordsClear: false,
    videoChannelAdd: null,
    videoChannelRemove: null,
    videoChannelsClear: false,
    deny: null,
    allow: null,
    logChannel: null,
    clearLogChannel: false,
    ...options,
  };
}

function settingsWith(rules: Partial<ServerRules>): GuildSettings {
  return { ...defaultGuildSettings(), rules: { ...noRules(), ...rules } };
}

/** The change applied to `settings` (whose rules are the ones checked against), or the refusal's words in `locale`. */
function applied(options: Partial<RulesGiven>, settings: GuildSettings = defaultGuildSettings(), locale = ENGLISH) {
  const context: RulesContext = { by: ADMIN, ownerId: OWNER, current: settings.rules };
  const request = rulesChange(given(options), context);
  if (!request.ok) return { refused: word(locale, request.notice) };
  return { description: request.description, rules: request.change(settings).rules };
}

function words(count: number, prefix = 'word'): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}${index}`);
}

describe('/config rules blocked words', () => {
  it('reads comma-separated words and phrases, Japanese and Chinese commas too, trimmed, one space between words', () => {
    expect(parseBlockedWords(' dragon , red   dragon,,dragon* ,')).toEqual(['dragon', 'red dragon', 'dragon*']);
    expect(parseBlockedWords('ドラゴン、竜，龍')).toEqual(['ドラゴン', '竜', '龍']);
    expect(parseBlockedWords(' , ,')).toEqual([]);
  });

  it('adds words, keeping one of two that block the same prompts, and records them in the history', () => {
    const first = applied({ blockedWordsAdd: 'dragon, red dragon, dragon*' });
    expect(first).toEqual({
      description: 'set rules: blocked "dragon", "red dragon", "dragon*"',
      rules: { ...noRules(), blockedWords: ['dragon', 'red dragon', 'dragon*'] },
    });
    // "DRAGON!" folds to `dragon`, and "Red-Dragon" to `red dragon`: both blocked already.
    const again = applied({ blockedWordsAdd: 'DRAGON!, Red-Dragon, wyvern' }, settingsWith({ blockedWords: ['dragon', 'red dragon'] }));
    expect(again).toMatchObject({ rules: { blockedWords: ['dragon', 'red dragon', 'wyvern'] } });
    // In a script without spaces a rule matches with its spaces left out: `ドラ ゴン` is `ドラゴン`.
    expect(applied({ blockedWordsAdd: 'ドラ ゴン' }, settingsWith({ blockedWords: ['ドラゴン'] }))).toMatchObject({
      rules: { blockedWords: ['ドラゴン'] },
    });
  });

  it('removes words however they are written, and clears them all', () => {
    const settings = settingsWith({ blockedWords: ['dragon', 'red dragon', 'dragon*'] });
    expect(applied({ blockedWordsRemove: 'DRAGON, dragon *' }, settings)).toEqual({
      description: 'set rules: unblocked "DRAGON", "dragon *"',
      rules: { ...noRules(), blockedWords: ['red dragon'] },
    });
    expect(applied({ blockedWordsClear: true }, settings)).toEqual({
      description: 'set rules: cleared the blocked words',
      rules: noRules(),
    });
  });

  it(`takes the ${BLOCKED_WORDS_LIMITS.rules}th word and refuses the next, naming the option and the limit`, () => {
    const full = settingsWith({ blockedWords: words(BLOCKED_WORDS_LIMITS.rules - 1) });
    expect(applied({ blockedWordsAdd: 'last' }, full)).toMatchObject({ rules: { blockedWords: [...words(199), 'last'] } });
    expect(applied({ blockedWordsAdd: 'one, two' }, full)).toEqual({
      refused:
        '`blocked_words_add`: a server blocks at most 200 words and phrases; with these it would be 201. `blocked_words_remove` makes room.',
    });
    // Removing some in the same change makes the room.
    expect(applied({ blockedWordsAdd: 'one, two', blockedWordsRemove: 'word0' }, full)).toMatchObject({
      rules: { blockedWords: [...words(199).slice(1), 'one', 'two'] },
    });
    // Words already blocked do not count twice.
    expect(applied({ blockedWordsAdd: 'word1, WORD2, last' }, full)).toMatchObject({ rules: { blockedWords: [...words(199), 'last'] } });
  });

  it('refuses a word or phrase over 60 characters, naming the option, the limit and the words, shortened', () => {
    const sixty = 'd'.repeat(60);
    expect(applied({ blockedWordsAdd: sixty })).toMatchObject({ rules: { blockedWords: [sixty] } });
    // A letter outside the BMP (two UTF-16 units) is one character, as a reader counts.
    expect(applied({ blockedWordsAdd: '𠮷'.repeat(60) })).toMatchObject({ rules: { blockedWords: ['𠮷'.repeat(60)] } });
    expect(applied({ blockedWordsAdd: `fine, ${'d'.repeat(61)}` })).toEqual({
      refused: `\`blocked_words_add\`: a blocked word or phrase is at most 60 characters. Too long: \`${'d'.repeat(29)}…\`.`,
    });
    const many = Array.from({ length: 8 }, (_, index) => `${index}${'x'.repeat(70)}`).join(',');
    const refused = applied({ blockedWordsAdd: many });
    expect(refused).toMatchObject({ refused: expect.stringMatching(/^`blocked_words_add`: .* Too long: (`\dx{28}…`, ){5}and 3 more\.$/) });
  });

  it('refuses a rule with nothing to match, and an option given only commas', () => {
    expect(applied({ blockedWordsAdd: 'dragon, *, !!!' })).toEqual({
      refused: '`blocked_words_add`: a blocked word or phrase needs a letter or a digit. Without one: `*` and `!!!`.',
    });
    expect(applied({ blockedWordsRemove: ' , ' })).toEqual({
      refused: '`blocked_words_remove`: give words or phrases, separated by commas.',
    });
  });

  it('leaves the words as they are when another admin filled the set since they were counted', () => {
    const request = rulesChange(given({ blockedWordsAdd: 'late' }), { by: ADMIN, ownerId: OWNER, current: noRules() });
    if (!request.ok) throw new Error('expected the change to be accepted');
    const filled = settingsWith({ blockedWords: words(BLOCKED_WORDS_LIMITS.rules) });
    expect(request.change(filled)).toEqual(filled);
  });
});

describe('/config rules channels and members', () => {
  it('allows /video in text channels and forums, and refuses any other channel', () => {
    const settings = settingsWith({ videoChannels: [TEXT] });
    expect(applied({ videoChannelAdd: { id: FORUM, kind: 'forum' } }, settings)).toEqual({
      description: `set rules: allowed /video in <#${FORUM}>`,
      rules: { ...noRules(), videoChannels: [TEXT, FORUM] },
    });
    expect(applied({ videoChannelAdd: { id: VOICE, kind: 'other' } })).toEqual({
      refused: `\`video_channel_add\`: <#${VOICE}> is not a text channel or forum of this server.`,
    });
    expect(applied({ videoChannelRemove: TEXT }, settings)).toMatchObject({ rules: { videoChannels: [] } });
    expect(applied({ videoChannelsClear: true }, settingsWith({ videoChannels: [TEXT, FORUM] }))).toEqual({
      description: 'set rules: allowed /video in every channel',
      rules: noRules(),
    });
  });

  it('denies and allows a member again, but never the admin themselves or the server owner', () => {
    expect(applied({ deny: MEMBER })).toEqual({
      description: `set rules: denied <@${MEMBER}> the bot`,
      rules: { ...noRules(), denied: [MEMBER] },
    });
    expect(applied({ allow: MEMBER }, settingsWith({ denied: [MEMBER] }))).toEqual({
      description: `set rules: allowed <@${MEMBER}> the bot again`,
      rules: noRules(),
    });
    expect(applied({ deny: ADMIN })).toEqual({ refused: '`deny`: you cannot deny yourself the bot.' });
    expect(applied({ deny: OWNER })).toEqual({ refused: "`deny`: the server's owner cannot be denied the bot." });
  });

  it('takes a log channel the bot can post in, refuses one it cannot or a forum, and clears it', () => {
    expect(applied({ logChannel: { id: TEXT, kind: 'text', missing: [] } })).toEqual({
      description: `set rules: log in <#${TEXT}>`,
      rules: { ...noRules(), logChannelId: TEXT },
    });
    expect(applied({ logChannel: { id: TEXT, kind: 'text', missing: ['view', 'send'] } })).toEqual({
      refused: `I may not post in <#${TEXT}>: I lack **View Channel** and **Send Messages** there. A server admin can give me View Channel and Send Messages in that channel, or pick another \`log_channel\`.`,
    });
    expect(applied({ logChannel: { id: FORUM, kind: 'forum', missing: [] } })).toEqual({
      refused: `\`log_channel\`: <#${FORUM}> is not a text channel of this server.`,
    });
    expect(applied({ clearLogChannel: true }, settingsWith({ logChannelId: TEXT }))).toEqual({
      description: 'set rules: no log channel',
      rules: noRules(),
    });
  });

  it.each([
    [{ blockedWordsAdd: 'a', blockedWordsClear: true }, '`blocked_words_add` or `blocked_words_clear`'],
    [{ blockedWordsRemove: 'a', blockedWordsClear: true }, '`blocked_words_remove` or `blocked_words_clear`'],
    [{ videoChannelAdd: { id: TEXT, kind: 'text' }, videoChannelsClear: true }, '`video_channel_add` or `video_channels_clear`'],
    [{ videoChannelRemove: TEXT, videoChannelsClear: true }, '`video_channel_remove` or `video_channels_clear`'],
    [{ videoChannelAdd: { id: TEXT, kind: 'text' }, videoChannelRemove: TEXT }, '`video_channel_add` or `video_channel_remove`'],
    [{ deny: MEMBER, allow: MEMBER }, '`deny` or `allow`'],
    [{ logChannel: { id: TEXT, kind: 'text', missing: [] }, clearLogChannel: true }, '`log_channel` or `clear_log_channel`'],
  ] as const)('refuses options that undo each other (%j)', (options, named) => {
    expect(applied(options)).toEqual({ refused: `Give ${named}, not both.` });
  });

  it('makes several changes at once, one line of the history', () => {
    expect(
      applied({
        blockedWordsAdd: 'dragon',
        videoChannelAdd: { id: TEXT, kind: 'text' },
        deny: MEMBER,
        logChannel: { id: TEXT, kind: 'text', missing: [] },
      }),
    ).toEqual({
      description: `set rules: blocked "dragon", allowed /video in <#${TEXT}>, denied <@${MEMBER}> the bot, log in <#${TEXT}>`,
      rules: { blockedWords: ['dragon'], videoChannels: [TEXT], denied: [MEMBER], logChannelId: TEXT },
    });
    expect(changesRules(given({}))).toBe(false);
    expect(changesRules(given({ clearLogChannel: true }))).toBe(true);
  });

  it('leaves the settings as they were for a change that changes nothing (the history records nothing)', () => {
    const settings = settingsWith({ blockedWords: ['dragon'], denied: [MEMBER] });
    const request = rulesChange(given({ blockedWordsAdd: 'Dragon', deny: MEMBER, allow: OWNER }), {
      by: ADMIN,
      ownerId: OWNER,
      current: settings.rules,
    });
    expect(request.ok && request.change(settings)).toEqual(settings);
  });

  it.each(SUPPORTED_LOCALES)('words every refusal in %s, naming the option in code', (locale) => {
    const full = settingsWith({ blockedWords: words(BLOCKED_WORDS_LIMITS.rules) });
    const refusals = [
      applied({ blockedWordsAdd: 'more' }, full, locale),
      applied({ blockedWordsAdd: 'x'.repeat(61) }, defaultGuildSettings(), locale),
      applied({ blockedWordsAdd: '*' }, defaultGuildSettings(), locale),
      applied({ deny: ADMIN }, defaultGuildSettings(), locale),
      applied({ deny: OWNER }, defaultGuildSettings(), locale),
    ];
    for (const refusal of refusals) expect(refusal).toMatchObject({ refused: expect.stringMatching(/`(blocked_words_add|deny)`/) });
    expect(refusals[0]).toMatchObject({ refused: expect.stringContaining('201') });
    expect(refusals[1]).toMatchObject({ refused: expect.stringContaining('60') });
  });

  it('reads a German admin the refusal in German', () => {
    const german = resolveLocale('de', undefined, 'member');
    expect(applied({ deny: OWNER }, defaultGuildSettings(), german)).toEqual({
      refused: '`deny`: Dem Eigentümer des Servers kann der Bot nicht gesperrt werden.',
    });
  });
});
