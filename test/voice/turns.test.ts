import { describe, expect, it } from 'vitest';
import { NAMED_MS, NAMED_SHARE, TurnSpeakers, TurnsOfSession } from '../../src/voice/turns.ts';

// Who spoke a turn: each member whose audio made a fifth of it or half a second (20 ms packets), the one
// heard most first; and which committed item of the realtime session each turn became.

function turn(speakers: TurnSpeakers, packets: Record<string, number>): readonly string[] {
  for (const [userId, count] of Object.entries(packets)) for (let packet = 0; packet < count; packet++) speakers.packet(userId);
  return speakers.turnEnded();
}

describe('the members of a turn', () => {
  it('are those heard for a fifth of it or half a second, the one heard most first', () => {
    expect([NAMED_SHARE, NAMED_MS]).toEqual([0.2, 500]);
    const speakers = new TurnSpeakers();
    // 2 s and 0.6 s: both (the second is under a fifth, but over half a second).
    expect(turn(speakers, { ana: 100, bo: 30 })).toEqual(['ana', 'bo']);
    // 10 s and 0.4 s (4%): a word under someone's long turn is not speaking in it.
    expect(turn(speakers, { ana: 500, bo: 20 })).toEqual(['ana']);
    // 0.4 s and 0.2 s: a third of a short turn is.
    expect(turn(speakers, { bo: 20, ana: 10 })).toEqual(['bo', 'ana']);
    // A cough or the silence frames closing a spurt (5 packets) in a 2 s turn: not.
    expect(turn(speakers, { ana: 100, bo: 5 })).toEqual(['ana']);
    // Six members murmuring (each under a fifth and half a second): the one heard most is still named.
    expect(turn(speakers, { a: 5, b: 4, c: 4, d: 4, e: 4, f: 4 })).toEqual(['a']);
  });

  it("of a turn nobody was heard in are the previous turn's", () => {
    const speakers = new TurnSpeakers();
    expect(speakers.turnEnded()).toEqual([]);
    expect(turn(speakers, { ana: 40 })).toEqual(['ana']);
    expect(speakers.turnEnded()).toEqual(['ana']);
    expect(speakers.lastTurn).toEqual(['ana']);
  });
});

describe('the turns of a realtime session', () => {
  it("bind each turn the bot committed to the gateway's item in order, skipping a commit it refused", () => {
    const turns = new TurnsOfSession();
    turns.ended(['ana']);
    turns.ended(['bo']);
    turns.ended(['cy']);
    turns.committed('item_1');
    // The second commit was refused (an empty buffer): the next item is the third turn's.
    turns.commitRefused();
    turns.committed('item_3');
    expect(turns.takeMembers('item_3')).toEqual(['cy']);
    expect(turns.takeMembers('item_1')).toEqual(['ana']);
    // A transcript comes once per item.
    expect(turns.takeMembers('item_1')).toBeUndefined();
    expect(turns.takeMembers(undefined)).toBeUndefined();
  });

  it("bind a turn the gateway ended itself to its item, leaving none of the bot's waiting", () => {
    const turns = new TurnsOfSession();
    turns.ended(['ana']);
    turns.committed('item_vad', ['bo']);
    turns.committed('item_next');
    expect(turns.takeMembers('item_vad')).toEqual(['bo']);
    expect(turns.takeMembers('item_next')).toBeUndefined();
  });
});
