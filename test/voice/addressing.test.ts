import { describe, expect, it } from 'vitest';
import { addressesBot, answersOnlyWhenNamed, normalizeSpeech } from '../../src/voice/addressing.ts';
import { checkVoiceSettingsChange, parseWakeWords, type VoiceSettingsChange } from '../../src/settings/voice-settings.ts';
import { word } from '../../src/wording/notice.ts';
import { ENGLISH } from '../../src/i18n/index.ts';

/** Why a voice settings change is refused, as the admin reads it (in English); undefined: accepted. */
function refusalOf(change: VoiceSettingsChange, vendor: string): string | undefined {
  const refusal = checkVoiceSettingsChange(change, vendor);
  return refusal && word(ENGLISH, refusal);
}

// Whether a turn names the bot: case, punctuation and a leading "hey"/"ok" do not matter.
describe('wake word matching', () => {
  it.each([
    ['Hey video-voice-bot, what time is it', true],
    ['hey VIDEO VOICE BOT what time is it?', true],
    ['OK video-voice-bot! Tell us a joke', true],
    ['what time is it, video voice bot?', true],
    ['what time is it', false],
    ['the video voice is nice', false],
    ['videovoicebot what time', false],
  ])('%j names "video-voice-bot": %s', (transcript, expected) => {
    expect(addressesBot(transcript, ['video-voice-bot'])).toBe(expected);
  });

  it('matches whole words only, any of several wake words, and ignores a leading "hey" in a wake word', () => {
    expect(addressesBot('Robotics is hard', ['Robo'])).toBe(false);
    expect(addressesBot('Robo, are you there', ['Robo', 'Hey Pixel'])).toBe(true);
    expect(addressesBot('pixel are you there', ['Robo', 'Hey Pixel'])).toBe(true);
    expect(addressesBot('Pixel… are you there', ['hey pixel'])).toBe(true);
    expect(addressesBot('Ça va, Zoé ?', ['zoé'])).toBe(true);
    expect(addressesBot('anything', [])).toBe(false);
  });

  it('normalizes case, punctuation and spacing', () => {
    expect(normalizeSpeech('  Hey,   Video-Voice-Bot!! ')).toBe('hey video voice bot');
  });

  it('answers only when named per respond mode and the people in the channel', () => {
    expect(answersOnlyWhenNamed('auto', 1)).toBe(false);
    expect(answersOnlyWhenNamed('auto', 2)).toBe(true);
    expect(answersOnlyWhenNamed('always', 5)).toBe(false);
    expect(answersOnlyWhenNamed('when_named', 1)).toBe(true);
  });

  it('reads wake_words as a comma-separated list and refuses names without letters, naming the option', () => {
    expect(parseWakeWords(' Robo , Hey Pixel,, ')).toEqual(['Robo', 'Hey Pixel']);
    expect(parseWakeWords(',')).toEqual([]);
    expect(refusalOf({ wakeWords: ['Robo', '!!!'] }, 'svc')).toBe('`wake_words`: "!!!" has no letters or digits to listen for.');
    expect(refusalOf({ wakeWords: Array.from({ length: 11 }, (_, index) => `name${index}`) }, 'svc')).toMatch(
      /^`wake_words` can list at most 10 names/,
    );
    expect(refusalOf({ wakeWords: ['Robo'], respond: 'when_named' }, 'svc')).toBeUndefined();
  });
});
