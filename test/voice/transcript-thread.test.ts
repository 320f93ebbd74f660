import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMITS } from '../../src/discord/message-limits.ts';
import { ENGLISH, resolveLocale, type Locale } from '../../src/i18n/index.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { TranscriptThread } from '../../src/voice/transcript-thread.ts';
import { word } from '../../src/wording/notice.ts';

// A conversation's transcript thread: every line named by who spoke it, and posted whole, however long a
// turn ran.

const NAMES: Readonly<Record<string, string>> = { '111': 'Ana', '222': 'Bo', '333': 'Star*Gazer_' };

function thread(posted: { channelId: string; content: string }[], locale: Locale = ENGLISH): TranscriptThread {
  return new TranscriptThread({
    outbox: {
      say: (channelId, content) => {
        posted.push({ channelId, content });
        return Promise.resolve(`message-${posted.length}`);
      },
      startThread: () => Promise.resolve('thread-1'),
    },
    log: silentLogger,
    guildId: 'guild',
    textChannelId: 'text',
    threadId: undefined,
    word: (told) => word(locale, told),
    voiceChannelId: () => 'voice',
    memberName: (userId) => Promise.resolve(NAMES[userId]),
    botName: () => 'Video Bot',
    onOpened: () => undefined,
    onRefused: () => undefined,
    post: () => Promise.resolve(),
  });
}

const inThread = (posted: { channelId: string; content: string }[]) =>
  posted.filter((message) => message.channelId === 'thread-1').map((message) => message.content);

describe('a transcript line', () => {
  it('names the member who spoke by name and mention, several members most heard first, and the bot by its name', async () => {
    const posted: { channelId: string; content: string }[] = [];
    const transcript = thread(posted);
    await transcript.postLine({ speaker: 'user', members: ['111'], text: 'what time is it', answered: false });
    await transcript.postLine({ speaker: 'user', members: ['222', '111'], text: 'hey bot, a video of a fox', answered: true });
    await transcript.postLine({ speaker: 'bot', text: 'Here it comes.', aside: false });
    expect(inThread(posted)).toEqual([
      '**Ana** (<@111>): what time is it · not answered (not addressed to me)',
      '**Bo** (<@222>) and **Ana** (<@111>): hey bot, a video of a fox · ✅ answered',
      '**Video Bot**: Here it comes.',
    ]);
  });

  it("names a member whose name cannot be looked up by their mention, keeps a name's markdown as text, and says when nobody was heard", async () => {
    const posted: { channelId: string; content: string }[] = [];
    const transcript = thread(posted);
    await transcript.postLine({ speaker: 'user', members: ['999', '333'], text: 'hello', answered: true });
    await transcript.postLine({ speaker: 'user', members: [], text: 'hello?', answered: true });
    expect(inThread(posted)).toEqual(['<@999> and **Star\\*Gazer\\_** (<@333>): hello · ✅ answered', '**Someone**: hello? · ✅ answered']);
  });

  it("is worded in the server's language", async () => {
    const posted: { channelId: string; content: string }[] = [];
    await thread(posted, resolveLocale('fr', undefined, 'channel')).postLine({
      speaker: 'user',
      members: ['111', '222'],
      text: 'bonjour',
      answered: false,
    });
    expect(inThread(posted)).toEqual(['**Ana** (<@111>) et **Bo** (<@222>) : bonjour · sans réponse (ne s’adressait pas à moi)']);
  });
});

describe('a transcript line longer than a Discord message', () => {
  it('is posted whole, in pieces that each fit and each name who spoke, cut between words', async () => {
    const posted: { channelId: string; content: string }[] = [];
    const said = Array.from({ length: 900 }, (_, index) => `word${index}`).join(' ');
    const ids = await thread(posted).postLine({ speaker: 'user', members: ['111'], text: said, answered: true });
    const lines = inThread(posted);
    expect(lines.length).toBeGreaterThan(1);
    expect(ids).toHaveLength(lines.length);
    for (const line of lines) {
      expect(line.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
      expect(line).toMatch(/^\*\*Ana\*\* \(<@111>\): word\d+( word\d+)*( · ✅ answered)?$/);
    }
    // Only the last piece says the turn was answered.
    expect(lines.filter((line) => line.endsWith(' · ✅ answered'))).toEqual([lines.at(-1)]);
    const text = lines.map((line) => line.replace('**Ana** (<@111>): ', '').replace(' · ✅ answered', '')).join(' ');
    expect(text).toBe(said);
  });
});
