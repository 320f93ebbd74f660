import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { hears, ignoring, listening, MAX_AGREED_SERVERS, parseConsentRecord, type ConsentRecord } from '../../src/voice/consent.ts';
import { Hearing } from '../../src/voice/hearing.ts';

// Whom a conversation hears, from the members' choices and its consent setting; and a conversation
// keeping that current while the store answers late, fails, or a member changes their mind meanwhile.

const GUILD = '100';
const BRINGER = '1';
const OTHER = '2';
const open = { mode: 'open', bringer: BRINGER, guildId: GUILD } as const;
const optIn = { mode: 'opt-in', bringer: BRINGER, guildId: GUILD } as const;
const none = { known: true, record: undefined } as const;
const known = (record: ConsentRecord) => ({ known: true, record }) as const;

describe('hears', () => {
  it('in an open conversation hears everyone who did not ask not to be heard', () => {
    expect(hears(OTHER, none, open)).toBe(true);
    expect(hears(OTHER, known(ignoring(undefined, 0)), open)).toBe(false);
    expect(hears(BRINGER, known(ignoring(undefined, 0)), open)).toBe(false);
  });

  it('in an opt-in conversation hears the bringer and those who agreed in this server only', () => {
    expect(hears(BRINGER, none, optIn)).toBe(true);
    expect(hears(OTHER, none, optIn)).toBe(false);
    expect(hears(OTHER, known(listening(undefined, GUILD, 0)), optIn)).toBe(true);
    expect(hears(OTHER, known(listening(undefined, '999', 0)), optIn)).toBe(false);
    // Asking not to be heard wins over an agreement, and over bringing the bot in.
    expect(hears(OTHER, known(ignoring(listening(undefined, GUILD, 0), 1)), optIn)).toBe(false);
    expect(hears(BRINGER, known(ignoring(undefined, 0)), optIn)).toBe(false);
  });

  it('does not hear a member whose choice is not known (being read, or unreadable)', () => {
    expect(hears(OTHER, { known: false }, open)).toBe(false);
    expect(hears(BRINGER, { known: false }, optIn)).toBe(false);
  });

  it('keeps agreements across ignoring and listening again, the newest within the bound', () => {
    const agreed = listening(ignoring(listening(undefined, GUILD, 0), 1), '200', 2);
    expect(agreed).toEqual({ v: 1, ignored: false, agreedIn: [GUILD, '200'], updatedAt: 2 });
    let many: ConsentRecord | undefined;
    for (let server = 0; server <= MAX_AGREED_SERVERS; server++) many = listening(many, String(server), server);
    expect(many?.agreedIn).toHaveLength(MAX_AGREED_SERVERS);
    expect(many?.agreedIn[0]).toBe('1');
    expect(parseConsentRecord(JSON.parse(JSON.stringify(agreed)))).toEqual(agreed);
    expect(() => parseConsentRecord({ v: 1, ignored: 'yes', agreedIn: [], updatedAt: 0 })).toThrow(/consent.ignored/);
  });
});

describe('Hearing', () => {
  it('hears nobody until their choice is read, and tells of each change', async () => {
    const changes: string[] = [];
    let answer: (record: ConsentRecord | undefined) => void = () => undefined;
    const hearing = new Hearing({
      context: open,
      read: () => new Promise((resolve) => (answer = resolve)),
      onChange: (userId) => changes.push(userId),
      log: silentLogger,
    });
    const loaded = hearing.load([OTHER]);
    expect(hearing.heard(OTHER)).toBe(false);
    answer(undefined);
    await loaded;
    expect(hearing.heard(OTHER)).toBe(true);
    hearing.set(OTHER, ignoring(undefined, 1));
    expect(hearing.heard(OTHER)).toBe(false);
    expect(changes).toEqual([OTHER, OTHER]);
  });

  it('takes a change of mind over a read that answers after it', async () => {
    let answer: (record: ConsentRecord | undefined) => void = () => undefined;
    const hearing = new Hearing({
      context: open,
      read: () => new Promise((resolve) => (answer = resolve)),
      onChange: () => undefined,
      log: silentLogger,
    });
    const loaded = hearing.load([OTHER]);
    hearing.set(OTHER, ignoring(undefined, 1));
    answer(undefined);
    await loaded;
    expect(hearing.heard(OTHER)).toBe(false);
  });

  it('does not hear a member whose choice cannot be read, and reads it again later', async () => {
    let failing = true;
    let changed: () => void = () => undefined;
    const heardAgain = new Promise<void>((resolve) => (changed = resolve));
    const hearing = new Hearing({
      context: open,
      read: () => (failing ? Promise.reject(new Error('the store did not answer')) : Promise.resolve(undefined)),
      onChange: () => changed(),
      log: silentLogger,
      rereadMs: 10,
    });
    await hearing.load([OTHER]);
    expect(hearing.heard(OTHER)).toBe(false);
    failing = false;
    await heardAgain;
    expect(hearing.heard(OTHER)).toBe(true);
    hearing.stop();
  });
});
