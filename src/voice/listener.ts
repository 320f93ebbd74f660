import { EndBehaviorType, type VoiceReceiver, type VoiceUserData } from '@discordjs/voice';
import type { Readable } from 'node:stream';
import type { Logger } from '../lib/log.ts';
import { isDaveFrame } from './audio/dave-frame.ts';
import type { SpeakerMixer } from './audio/mixer.ts';
import { OpusFrameDecoder, isOpusSilenceFrame } from './audio/opus.ts';

// Hears everyone in the channel: a receive stream per speaking user, one Opus decoder per speaker, each
// decoded frame handed to the mixer. The library destroys a stream when a packet fails decryption (for
// DAVE, after 36 failures in a row). Its speaking "start" only fires again after 100 ms without packets,
// so a user who keeps talking would go unheard until they pause: a destroyed stream is replaced at once
// while its user is still speaking. A frame still end-to-end encrypted (the library passes them on while
// its DAVE session has no keys) is dropped, never decoded: as Opus it is loud noise. An Opus packet that
// happens to end in a well-formed DAVE trailer (well under one in a million) is lost as one 20 ms frame.
// A client closes each talk spurt with Opus silence frames; audio that stops without them dropped out
// (a network or client hiccup) and is likely to resume, which is what the bot ending turns needs to know.
// Those frames are silence the listener knows without decoding them: they are neither decoded nor mixed.
//
// A member the conversation does not hear (the bot itself, one who asked not to be heard, one who has not
// agreed in an opt-in conversation) is kept out of the receiver's SSRC -> user map: their packets end at
// that lookup as an unknown SSRC's do, before any decryption, decoding, mixing, metering or speaking
// signal, so nothing of them is transcribed or counted as who spoke. Their entry is held aside and put
// back the moment they are heard again.

export interface ListenerEvents {
  /** A user began speaking (Discord's speaking start). */
  onSpeakingStart?(userId: string): void;
  /**
   * Nobody is speaking any more (everyone's speaking ended). `droppedOut`: someone's audio stopped
   * without the silence frames that close a talk spurt, so it may well go on.
   */
  onAllSilent?(droppedOut: boolean): void;
  /** A packet was decoded and queued, at this time (for latency measurements). */
  onPacket?(userId: string, receivedAt: number): void;
  /** A frame arrived still end-to-end encrypted, and was dropped. */
  onUndecrypted?(userId: string): void;
  /** A receive stream ended with an error (it is replaced while its user speaks). */
  onReceiveError?(userId: string, error: Error): void;
}

export class VoiceListener {
  readonly #receiver: VoiceReceiver;
  readonly #mixer: SpeakerMixer;
  readonly #log: Logger;
  readonly #events: ListenerEvents;
  readonly #hears: (userId: string) => boolean;
  /** The SSRC entries of the users not heard, kept out of the receiver's map, by user id. */
  readonly #heldBack = new Map<string, VoiceUserData>();
  readonly #onSsrc = (_before: VoiceUserData | undefined, entry: VoiceUserData) => this.#admit(entry);
  readonly #streams = new Map<string, Readable>();
  readonly #decoders = new Map<string, OpusFrameDecoder>();
  readonly #speaking = new Set<string>();
  /** Speakers whose last packet was audio, not the silence that closes a talk spurt. */
  readonly #midSpurt = new Set<string>();
  /** Since everyone was last silent, someone's speaking ended mid-spurt. */
  #droppedOut = false;
  readonly #onStart = (userId: string) => this.#start(userId);
  readonly #onEnd = (userId: string) => this.#end(userId);
  #stopped = false;

  constructor(
    receiver: VoiceReceiver,
    mixer: SpeakerMixer,
    options: { log: Logger; events?: ListenerEvents; hears?: (userId: string) => boolean },
  ) {
    this.#receiver = receiver;
    this.#mixer = mixer;
    this.#log = options.log;
    this.#events = options.events ?? {};
    this.#hears = options.hears ?? (() => true);
    receiver.speaking.on('start', this.#onStart);
    receiver.speaking.on('end', this.#onEnd);
    receiver.ssrcMap.on('update', this.#onSsrc);
  }

  /** A user's SSRC became known (or changed): out of the map unless they are heard. */
  #admit(entry: VoiceUserData): void {
    if (this.#hears(entry.userId)) return;
    this.#heldBack.set(entry.userId, entry);
    this.#receiver.ssrcMap.delete(entry.audioSSRC);
  }

  /**
   * Whether `userId` is heard changed. Not heard any more: their SSRC leaves the map and what was under way
   * of them (stream, decoder, queued audio, speaking) is dropped at once. Heard again: their SSRC is put
   * back, and speech already under way is listened to from the next packet.
   */
  hearingChanged(userId: string): void {
    if (this.#stopped) return;
    if (!this.#hears(userId)) {
      const entry = this.#receiver.ssrcMap.get(userId);
      if (entry) this.#admit(entry);
      this.forget(userId, { keepHeldBack: true });
      return;
    }
    const held = this.#heldBack.get(userId);
    this.#heldBack.delete(userId);
    if (held) this.#receiver.ssrcMap.update(held);
    // The library signals a start only after 100 ms without packets: someone talking on would go unheard.
    if (this.#receiver.speaking.users.has(userId)) this.#start(userId);
  }

  get speakers(): number {
    return this.#speaking.size;
  }

  #start(userId: string): void {
    if (!this.#hears(userId)) {
      // Mapped before this listener was there: out of the map from its first packet on.
      const entry = this.#receiver.ssrcMap.get(userId);
      if (entry) this.#admit(entry);
      return;
    }
    this.#speaking.add(userId);
    this.#subscribe(userId);
    this.#events.onSpeakingStart?.(userId);
  }

  #end(userId: string): void {
    if (!this.#speaking.delete(userId)) return;
    if (this.#midSpurt.has(userId)) this.#droppedOut = true;
    if (this.#speaking.size > 0) return;
    const droppedOut = this.#droppedOut;
    this.#droppedOut = false;
    this.#events.onAllSilent?.(droppedOut);
  }

  #subscribe(userId: string): void {
    if (this.#streams.has(userId)) return;
    const stream = this.#receiver.subscribe(userId, { end: { behavior: EndBehaviorType.Manual } });
    this.#streams.set(userId, stream);
    let decoder = this.#decoders.get(userId);
    if (!decoder) {
      decoder = new OpusFrameDecoder();
      this.#decoders.set(userId, decoder);
    }
    const speakerDecoder = decoder;
    stream.on('data', (packet: Buffer) => {
      const receivedAt = performance.now();
      if (isDaveFrame(packet)) {
        this.#events.onUndecrypted?.(userId);
        return;
      }
      if (isOpusSilenceFrame(packet)) {
        // Known silence, not decoded: the speaker holds no slot of the mix back, and the pump sends the
        // silence the gateway needs (its pause counts from the last speech, as the VAD's does).
        this.#midSpurt.delete(userId);
        this.#mixer.quiet(userId);
        return;
      }
      this.#midSpurt.add(userId);
      const pcm = speakerDecoder.decode(packet);
      if (!pcm) {
        this.#log.debug('skipped an undecodable voice packet', { user: userId, corrupt: speakerDecoder.corruptPackets });
        return;
      }
      this.#mixer.push(userId, pcm);
      this.#events.onPacket?.(userId, receivedAt);
    });
    stream.once('error', (error) => {
      this.#log.warn('a voice receive stream failed; the speaker is subscribed again', { user: userId, error });
      this.#events.onReceiveError?.(userId, error);
    });
    stream.once('close', () => {
      if (this.#streams.get(userId) !== stream) return;
      this.#streams.delete(userId);
      // The receiver forgets the stream in its own 'close' listener; a new one can be had from the next tick.
      process.nextTick(() => {
        if (!this.#stopped && this.#speaking.has(userId) && !this.#streams.has(userId)) this.#subscribe(userId);
      });
    });
  }

  /** A user left the channel (or is not heard any more): forget their stream, decoder and queued audio. */
  forget(userId: string, { keepHeldBack = false }: { keepHeldBack?: boolean } = {}): void {
    if (!keepHeldBack) this.#heldBack.delete(userId);
    this.#streams.get(userId)?.destroy();
    this.#streams.delete(userId);
    this.#decoders.get(userId)?.delete();
    this.#decoders.delete(userId);
    this.#mixer.remove(userId);
    // Someone who left will not resume.
    this.#midSpurt.delete(userId);
    this.#end(userId);
  }

  stop(): void {
    this.#stopped = true;
    this.#receiver.speaking.off('start', this.#onStart);
    this.#receiver.speaking.off('end', this.#onEnd);
    this.#receiver.ssrcMap.off('update', this.#onSsrc);
    // The receiver outlives the conversation only to be destroyed with its connection; a held entry is not put back.
    this.#heldBack.clear();
    for (const userId of [...this.#streams.keys(), ...this.#decoders.keys()]) this.forget(userId);
  }
}
