import { describe, expect, it } from 'vitest';
import { SUPPORTED_LOCALES } from '../../src/i18n/index.ts';
import { defaultVoiceSettings } from '../../src/settings/voice-settings.ts';
import { conversationRecordParser, MAX_RECORDED_TURNS, withTurn, type RecordedTurn } from '../../src/voice/conversation-record.ts';

// A conversation's record keeps who spoke each member's turn, so that the turns of one member can be found
// (to forget them); a record written before it knew reads as before, its turns naming nobody.

const defaults = defaultVoiceSettings('svc');
const parse = conversationRecordParser(defaults, SUPPORTED_LOCALES);
const conversation = {
  voiceChannelId: 'vc',
  textChannelId: 'tc',
  userId: 'u1',
  settings: defaults,
  transcriptThreadId: 'th',
  restarting: true,
  rejoinAttempts: 1,
  updatedAt: 5,
};

describe("a conversation's record", () => {
  it('keeps the members of each turn, the one heard most first, through the store', () => {
    const turns: RecordedTurn[] = [
      { speaker: 'user', text: 'a video of a fox', members: ['u2', 'u1'] },
      { speaker: 'bot', text: 'Here it comes.', members: [] },
    ];
    const stored = JSON.parse(JSON.stringify({ v: 2, ...conversation, turns })) as unknown;
    expect(parse(stored)).toEqual({ v: 2, ...conversation, turns });
  });

  it('written before turns named their members (version 1) reads with turns naming nobody, its counts kept', () => {
    const stored = {
      v: 1,
      ...conversation,
      turns: [
        { speaker: 'user', text: 'My name is Ada.' },
        { speaker: 'bot', text: 'Nice to meet you, Ada.' },
      ],
    };
    expect(parse(JSON.parse(JSON.stringify(stored)))).toEqual({
      v: 2,
      ...conversation,
      turns: [
        { speaker: 'user', text: 'My name is Ada.', members: [] },
        { speaker: 'bot', text: 'Nice to meet you, Ada.', members: [] },
      ],
    });
  });

  it('keeps the newest turns with their members when older ones are dropped', () => {
    let turns: RecordedTurn[] = [];
    for (let index = 0; index < MAX_RECORDED_TURNS + 2; index++) {
      turns = withTurn(turns, { speaker: 'user', text: `turn ${index}`, members: [`m${index}`] });
    }
    expect(turns).toHaveLength(MAX_RECORDED_TURNS);
    expect(turns[0]).toEqual({ speaker: 'user', text: 'turn 2', members: ['m2'] });
    expect(turns.at(-1)).toEqual({ speaker: 'user', text: `turn ${MAX_RECORDED_TURNS + 1}`, members: [`m${MAX_RECORDED_TURNS + 1}`] });
  });
});
