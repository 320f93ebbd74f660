import { describe, expect, it } from 'vitest';
import { ENGLISH } from '../../src/i18n/index.ts';
import {
  checkVoiceSettingsChange,
  defaultVoiceSettings,
  parseStoredVoiceSettings,
  type VoiceSettingsChange,
} from '../../src/settings/voice-settings.ts';
import { word } from '../../src/wording/notice.ts';
import { conversationRecordParser } from '../../src/voice/conversation-record.ts';
import { SUPPORTED_LOCALES } from '../../src/i18n/index.ts';

/** Why a voice settings change is refused, as the admin reads it (in English); undefined: accepted. */
function refusalOf(change: VoiceSettingsChange, vendor: string): string | undefined {
  const refusal = checkVoiceSettingsChange(change, vendor);
  return refusal && word(ENGLISH, refusal);
}

// /voice settings checks a change before storing it; which voices exist is the gateway's to say.
describe('a voice settings change', () => {
  it.each(['eve', 'Ara', 'a-new-voice_2'])('accepts the voice id %s, built in or not', (voice) => {
    expect(refusalOf({ voice }, 'svc')).toBeUndefined();
  });

  it.each(['', 'eve leo', 'no!pe'])('refuses %j, naming the option and the rule', (voice) => {
    expect(refusalOf({ voice }, 'svc')).toMatch(/^`voice` must be a voice id such as altair/);
  });

  it('refuses a model that is not a realtime voice model of the vendor', () => {
    expect(refusalOf({ model: 'svc-imagine-video-1.5' }, 'svc')).toMatch(/^`model` must be a realtime voice model/);
    expect(refusalOf({ model: 'acme-voice-latest' }, 'acme')).toBeUndefined();
  });
});

// One schema for voice settings: a server's stored settings (the settings part) and a conversation's
// record (the voice part) are read with the bounds /voice settings enforces; a stored setting out of
// them is its default, said in one warning, and the rest of the record stays.
describe('stored voice settings', () => {
  const outOfBounds = { vadThreshold: 7, silenceMs: 800, wakeWords: ['x'.repeat(41)], language: 'tlh', voice: 'leo' };

  it("of a server are read within /voice settings' bounds, each one outside them left to its default", () => {
    const warnings: unknown[] = [];
    const read = parseStoredVoiceSettings(outOfBounds, (message, fields) => warnings.push({ message, fields }));
    expect(read).toEqual({ silenceMs: 800, voice: 'leo' });
    expect(warnings).toEqual([
      {
        message: 'stored voice settings out of their bounds are read as their defaults',
        fields: { settings: ['vadThreshold', 'wakeWords', 'language'] },
      },
    ]);
    expect(refusalOf({ vadThreshold: 7 }, 'svc')).toMatch(/^`vad_threshold` must be from 0.05 to 1/);
  });

  it("of a conversation are read the same way, the missing and the out of bounds the vendor's defaults, its language kept", () => {
    const defaults = defaultVoiceSettings('svc');
    const parse = conversationRecordParser(defaults, SUPPORTED_LOCALES);
    const stored = {
      voiceChannelId: 'vc',
      textChannelId: 'tc',
      userId: 'u',
      settings: { ...defaults, language: 'de', instructions: 'x'.repeat(2001), idleMinutes: undefined },
      turns: [{ speaker: 'user', text: 'hello' }],
      restarting: true,
      rejoinAttempts: 1,
      updatedAt: 5,
    };
    const warnings: unknown[] = [];
    const record = parse(JSON.parse(JSON.stringify(stored)), (message, fields) => warnings.push({ message, fields }));
    expect(record).toEqual({
      ...stored,
      v: 2,
      turns: [{ speaker: 'user', text: 'hello', members: [] }],
      settings: { ...defaults, language: 'de' },
    });
    expect(warnings).toEqual([
      {
        message: "a conversation's voice settings missing or out of their bounds are read as their defaults",
        fields: { settings: ['idleMinutes', 'instructions'] },
      },
    ]);
  });

  it('of a conversation are warned of once for the same stored record, however often a start reads it', () => {
    const defaults = defaultVoiceSettings('svc');
    const parse = conversationRecordParser(defaults, SUPPORTED_LOCALES);
    const stored = { v: 1, voiceChannelId: 'vc', textChannelId: 'tc', userId: 'u', turns: [], restarting: true, rejoinAttempts: 0 };
    const settings = { ...defaults, instructions: 'x'.repeat(5 * 1024 * 1024) };
    const warnings: unknown[] = [];
    const read = (updatedAt: number) => parse({ ...stored, settings, updatedAt }, (message) => warnings.push(message));
    for (let reads = 0; reads < 3; reads++) expect(read(5).settings.instructions).toBe(defaults.instructions);
    expect(warnings).toHaveLength(1);
    // Written again with the same settings (another conversation, a bug): warned of again.
    read(6);
    expect(warnings).toHaveLength(2);
  });

  it('of a conversation recorded before restarts were counted read as live, never tried again', () => {
    const record = conversationRecordParser(
      defaultVoiceSettings('svc'),
      SUPPORTED_LOCALES,
    )({
      voiceChannelId: 'vc',
      textChannelId: 'tc',
      userId: 'u',
      settings: defaultVoiceSettings('svc'),
      turns: [],
    });
    expect(record).toMatchObject({ v: 2, restarting: false, rejoinAttempts: 0, updatedAt: 0 });
  });
});
