import { VoiceReceiver, type VoiceConnection } from '@discordjs/voice';
import { silentLogger } from '../src/lib/log.ts';
import { SpeakerMixer } from '../src/voice/audio/mixer.ts';
import { VoiceListener } from '../src/voice/listener.ts';
import { gc } from './voice-rig.ts';

// Issue 37: "ignoring members costs no CPU per ignored packet beyond reading its SSRC". The real
// @discordjs/voice receiver and the bot's listener, in this process: a UDP message is handed to the
// receiver as its socket would, for three senders. An unknown SSRC (nobody the voice server announced)
// is the floor: the receiver reads the SSRC, finds nobody and stops. An ignored member's packet should
// cost the same, since the listener keeps them out of the SSRC map. For scale, the same member left in the
// map but not subscribed to: what ignoring would cost if it only skipped decoding (the library's speaking
// signal still runs a timer per packet).

const PACKETS_PER_ROUND = 500_000;
const ROUNDS = 7;
const IGNORED_USER = '300000000000000001';
const MAPPED_USER = '300000000000000002';
const IGNORED_SSRC = 1111;
const MAPPED_SSRC = 2222;
const UNKNOWN_SSRC = 9999;

/** An RTP packet as Discord sends it (header, then 60 bytes standing for the encrypted Opus frame). */
function rtpPacket(ssrc: number): Buffer {
  const packet = Buffer.alloc(12 + 60);
  packet[0] = 0x80;
  packet[1] = 0x78;
  packet.writeUInt32BE(ssrc, 8);
  return packet;
}

/** Nanoseconds per packet handed to `receiver`, over one round. */
function nsPerPacket(receiver: VoiceReceiver, packet: Buffer): number {
  const start = process.hrtime.bigint();
  for (let index = 0; index < PACKETS_PER_ROUND; index++) receiver.onUdpMessage(packet);
  return Number(process.hrtime.bigint() - start) / PACKETS_PER_ROUND;
}

export interface VoiceConsentReport {
  packetsPerRound: number;
  rounds: number;
  unknownNs: number[];
  ignoredNs: number[];
  mappedNs: number[];
}

export function benchmarkVoiceConsent(): VoiceConsentReport {
  // The receiver keeps its connection only to decrypt a subscribed user's packets, which none of these is.
  const connection = {} as VoiceConnection;
  const gated = new VoiceReceiver(connection);
  const listener = new VoiceListener(gated, new SpeakerMixer(), { log: silentLogger, hears: (userId) => userId !== IGNORED_USER });
  // The voice server announces the member's SSRC (op 5) as it would: the listener holds it back.
  gated.ssrcMap.update({ userId: IGNORED_USER, audioSSRC: IGNORED_SSRC });
  if (gated.ssrcMap.get(IGNORED_SSRC) !== undefined) throw new Error('the ignored member is still in the SSRC map');
  const ungated = new VoiceReceiver(connection);
  ungated.ssrcMap.update({ userId: MAPPED_USER, audioSSRC: MAPPED_SSRC });
  const cases = { unknown: rtpPacket(UNKNOWN_SSRC), ignored: rtpPacket(IGNORED_SSRC), mapped: rtpPacket(MAPPED_SSRC) };
  // Warm up (JIT) before the measured rounds.
  nsPerPacket(gated, cases.unknown);
  nsPerPacket(gated, cases.ignored);
  nsPerPacket(ungated, cases.mapped);
  const report: VoiceConsentReport = { packetsPerRound: PACKETS_PER_ROUND, rounds: ROUNDS, unknownNs: [], ignoredNs: [], mappedNs: [] };
  for (let round = 0; round < ROUNDS; round++) {
    // Each round in another order, so that the machine's drift weighs on every case alike.
    const order = round % 2 === 0 ? (['unknown', 'ignored', 'mapped'] as const) : (['mapped', 'ignored', 'unknown'] as const);
    for (const which of order) {
      gc();
      const ns = nsPerPacket(which === 'mapped' ? ungated : gated, cases[which]);
      report[`${which}Ns`].push(ns);
    }
  }
  listener.stop();
  if (gated.speaking.users.has(IGNORED_USER)) throw new Error('the ignored member was counted as speaking');
  return report;
}

export function printVoiceConsentReport(report: VoiceConsentReport): void {
  // The fastest round of each case is the one least disturbed by whatever else the machine runs.
  const unknown = Math.min(...report.unknownNs);
  const ignored = Math.min(...report.ignoredNs);
  const mapped = Math.min(...report.mappedNs);
  const runs = (values: number[]) => values.map((ns) => ns.toFixed(1)).join(', ');
  const lines = [
    `voice-consent: ${report.rounds} rounds of ${report.packetsPerRound} packets each, handed to the real @discordjs/voice receiver (fastest round of each)`,
    `  unknown SSRC            ${unknown.toFixed(1)} ns a packet (rounds: ${runs(report.unknownNs)})`,
    `  ignored member          ${ignored.toFixed(1)} ns a packet, ${(ignored / unknown).toFixed(2)}x an unknown SSRC (target about 1) (rounds: ${runs(report.ignoredNs)})`,
    `  mapped, not subscribed  ${mapped.toFixed(1)} ns a packet, ${(mapped / unknown).toFixed(2)}x an unknown SSRC: ignoring by skipping decoding alone (rounds: ${runs(report.mappedNs)})`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
