import { EndBehaviorType, type VoiceReceiver } from '@discordjs/voice';
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
  readonly #shouldHear: (userId: string) => boolean;
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
    options: { log: Logger; events?: ListenerEvents; shouldHear?: (userId: string) => boolean },
  ) {
    this.#receiver = receiver;
    this.#mixer = mixer;
    this.#log = options.log;
    this.#events = options.events ?? {};
    this.#shouldHear = options.shouldHear ?? (() => true);
    receiver.speaking.on('start', this.#onStart);
    receiver.speaking.on('end', this.#onEnd);
  }

  get speakers(): number {
    return this.#speaking.size;
  }

  #start(userId: string): void {
    if (!this.#shouldHear(userId)) return;
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
      if (isOpusSilenceFrame(packet)) this.#midSpurt.delete(userId);
      else this.#midSpurt.add(userId);
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

  /** A user left the channel: forget their stream, decoder and queued audio. */
  forget(userId: string): void {
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
    for (const userId of [...this.#streams.keys(), ...this.#decoders.keys()]) this.forget(userId);
  }
}
