import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMITS } from '../../src/discord/message-limits.ts';
import { ENGLISH } from '../../src/i18n/index.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { TranscriptThread } from '../../src/voice/transcript-thread.ts';
import { word } from '../../src/wording/notice.ts';

// A conversation's transcript thread: every line posted whole, however long a turn ran.

function thread(posted: { channelId: string; content: string }[]): TranscriptThread {
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
    word: (told) => word(ENGLISH, told),
    voiceChannelId: () => 'voice',
    onOpened: () => undefined,
    onRefused: () => undefined,
    post: () => Promise.resolve(),
  });
}

describe('a transcript line longer than a Discord message', () => {
  it('is posted whole, in pieces that each fit, cut between words', async () => {
    const posted: { channelId: string; content: string }[] = [];
    const said = Array.from({ length: 900 }, (_, index) => `word${index}`).join(' ');
    await thread(posted).postLine('bot', said, true);
    const lines = posted.filter((message) => message.channelId === 'thread-1').map((message) => message.content);
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(MESSAGE_LIMITS.content);
    expect(lines.join('')).toBe(`**Bot**: ${said}`);
  });
});
