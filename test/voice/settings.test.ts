import { describe, expect, it } from 'vitest';
import { checkVoiceSettingsChange } from '../../src/settings/voice-settings.ts';

// /voice settings checks a change before storing it; which voices exist is the gateway's to say.
describe('a voice settings change', () => {
  it.each(['eve', 'Ara', 'a-new-voice_2'])('accepts the voice id %s, built in or not', (voice) => {
    expect(checkVoiceSettingsChange({ voice }, 'svc')).toBeUndefined();
  });

  it.each(['', 'eve leo', 'no!pe'])('refuses %j, naming the option and the rule', (voice) => {
    expect(checkVoiceSettingsChange({ voice }, 'svc')).toMatch(/^`voice` must be a voice id such as altair/);
  });

  it('refuses a model that is not a realtime voice model of the vendor', () => {
    expect(checkVoiceSettingsChange({ model: 'svc-imagine-video-1.5' }, 'svc')).toMatch(/^`model` must be a realtime voice model/);
    expect(checkVoiceSettingsChange({ model: 'acme-voice-latest' }, 'acme')).toBeUndefined();
  });
});
