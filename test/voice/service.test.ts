// The voice service in this process, with the real discord.js client and @discordjs/voice on the
// Discord stand-in and its realtime sessions on the emulator; only the clock that measures idleness is
// the test's, so that "ten minutes without a word" takes no ten minutes.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGuild } from 'discord-standin';
import type { VoiceService } from '../../src/voice/service.ts';
import { startVoiceServiceRig, type VoiceServiceRig } from '../support/voice-service-rig.ts';

let rig: VoiceServiceRig;
let guild: TestGuild;
let service: VoiceService;

let clock = Date.now();
const lookers: (() => void)[] = [];
/** The service's clock: it resolves the waits of nextLook() each time the service reads it. */
function now(): number {
  for (const resolve of lookers.splice(0)) resolve();
  return clock;
}
function nextLook(): Promise<void> {
  return new Promise((resolve) => lookers.push(resolve));
}

beforeAll(async () => {
  rig = await startVoiceServiceRig();
  guild = rig.discord.createGuild();
  service = rig.voiceService({ idle: { now, checkMs: 20 } });
}, 60_000);

afterAll(async () => {
  await service?.stopAll();
  await rig?.close();
});

describe('the voice service', () => {
  it('leaves after the configured time without anyone speaking, and not before', async () => {
    await rig.settings.changeVoiceSettings(guild.id, { idleMinutes: 2 }, guild.admin.id);
    await rig.memberInVoice(guild);
    expect(await service.join(guild.id, guild.voiceChannelId, guild.textChannelId, guild.member.id)).toMatchObject({
      ok: true,
      encryption: { encrypted: true, ready: true },
    });

    clock += 119_000;
    await nextLook();
    expect(service.isIn(guild.id)).toBe(true);

    clock += 2_000;
    await rig.discord.waitForMessage(
      guild.textChannelId,
      (message) => message.content === `Stopped listening in <#${guild.voiceChannelId}> (nobody spoke for 2 minutes).`,
    );
    expect(service.isIn(guild.id)).toBe(false);
    await rig.discord.voice.waitForBotDisconnect(guild.id);
  });
});
