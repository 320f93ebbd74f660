import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGLISH } from '../../src/i18n/index.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { turnOwners, withoutMember, type RecordedTurn } from '../../src/voice/conversation-record.ts';
import { forgetInTranscripts } from '../../src/voice/transcript-forgetting.ts';
import { parseMemberLines, rememberLine, TRANSCRIPT_LINES, type TranscriptLines } from '../../src/voice/transcript-lines.ts';
import { word } from '../../src/wording/notice.ts';

// Forgetting a member: their turns and the bot's answers to them leave the stored conversation, and their
// transcript lines are deleted, a line they spoke with others edited to leave them out (and not named again
// when another of those members is forgotten later).

const ana = '111';
const bo = '222';
const NAMES: Readonly<Record<string, string>> = { [ana]: 'Ana', [bo]: 'Bo' };

const turns: RecordedTurn[] = [
  { speaker: 'bot', text: 'Hello all.', members: [] },
  { speaker: 'user', text: 'My name is Ana.', members: [ana] },
  { speaker: 'bot', text: 'Nice to meet you, Ana.', members: [] },
  { speaker: 'user', text: 'We both keep bees.', members: [bo, ana] },
  { speaker: 'bot', text: 'Bees!', members: [] },
  { speaker: 'user', text: 'I am Bo.', members: [bo] },
  { speaker: 'bot', text: 'Hi Bo.', members: [] },
];

describe("a conversation's turns without a member", () => {
  it("owns each of the bot's turns by the member's turn it follows", () => {
    expect(turnOwners(turns)).toEqual([[], [ana], [ana], [bo, ana], [bo, ana], [bo], [bo]]);
  });

  it("drops the member's turns, shared ones whole, and the bot's answers to them; counts their own turns", () => {
    expect(withoutMember(turns, ana)).toEqual({
      turns: [turns[0], turns[5], turns[6]],
      removed: 2,
    });
    expect(withoutMember(turns, 'nobody')).toEqual({ turns, removed: 0 });
  });
});

describe('forgetting in the transcripts', () => {
  let directory: string;
  let store: Store;
  let lines: TranscriptLines;
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'forgetting-'));
    store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
    lines = store.collection(TRANSCRIPT_LINES, parseMemberLines);
  });
  afterAll(async () => {
    await store?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  function outbox() {
    const done: string[] = [];
    return {
      done,
      deleteMessage: (channelId: string, messageId: string) => {
        done.push(`delete ${channelId}/${messageId}`);
        return Promise.resolve('deleted' as const);
      },
      editText: (channelId: string, messageId: string, content: string) => {
        done.push(`edit ${channelId}/${messageId}: ${content}`);
        return Promise.resolve();
      },
    };
  }

  const forget = (userId: string, sent: ReturnType<typeof outbox>) =>
    forgetInTranscripts(userId, {
      outbox: sent,
      lines,
      guildId: 'g1',
      word: (told) => word(ENGLISH, told),
      memberName: (userId) => Promise.resolve(NAMES[userId]),
      log: silentLogger,
    });

  it("deletes the member's own lines and the answers to them, and edits a shared line to leave them out", async () => {
    await rememberLine(lines, 'g1', { threadId: 't', messageIds: ['m1'], kind: 'turn', members: [ana], answered: 'yes' });
    await rememberLine(lines, 'g1', { threadId: 't', messageIds: ['m2'], kind: 'answer', members: [ana], answered: 'none' });
    await rememberLine(lines, 'g1', { threadId: 't', messageIds: ['m3', 'm4'], kind: 'turn', members: [bo, ana], answered: 'no' });
    await rememberLine(lines, 'g1', { threadId: 't', messageIds: ['m5'], kind: 'turn', members: [bo], answered: 'yes' });

    const sent = outbox();
    expect(await forget(ana, sent)).toEqual({ deleted: 3, edited: 1 });
    expect(sent.done).toEqual([
      'delete t/m1',
      'delete t/m2',
      `edit t/m3: **Bo** (<@${bo}>): _(words removed: a member who spoke in this turn asked me to forget them)_ · not answered (not addressed to me)`,
      'delete t/m4',
    ]);
    // Asked again, nothing is left of hers.
    expect(await forget(ana, outbox())).toEqual({ deleted: 0, edited: 0 });

    // Bo forgotten later: the shared line, now his alone, goes; Ana is not named again.
    const later = outbox();
    expect(await forget(bo, later)).toEqual({ deleted: 3, edited: 0 });
    expect(later.done).toEqual(['delete t/m3', 'delete t/m4', 'delete t/m5']);
  });
});
