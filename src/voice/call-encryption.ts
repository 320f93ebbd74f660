import { EventEmitter } from 'node:events';
import type { DAVESession, VoiceConnection, VoiceConnectionState } from '@discordjs/voice';
import type { Logger } from '../lib/log.ts';
import type { BotMetrics } from '../lib/metrics.ts';
import { notice, type Notice } from '../wording/notice.ts';

// DAVE, Discord's end-to-end encryption of voice calls, as the bot's conversation sees it: whether the
// call is encrypted, whether the bot holds the group's keys (only then may it play, or hear anyone), the
// epoch and the voice privacy code members compare; and what the bot does when decryption goes wrong.
//
// @discordjs/voice runs the protocol (its DAVESession, one per voice websocket session). What it leaves
// to its user, as of 0.19.2:
// - it hands frames on undecrypted while its session has no keys (the listener drops them and reports
//   them here);
// - after 36 failures in a row it rebuilds its session and asks to be added again (op 31), but only if
//   its last transition id is not 0: with 0 it throws on every packet instead, and each throw ends the
//   receive stream. The monitor does the library's recovery for it then.
// - nothing makes it rejoin when members stay undecryptable: after REJOIN_AFTER_FAILING_MS of failing
//   frames and nothing heard, the monitor rejoins the channel (a fresh voice session and DAVE group),
//   at most once a minute. The connection, the conversation and its realtime session stay.
//
// The library tells its DAVE session's progress only in debug lines; the monitor takes each as a cue to
// read the session's state again, and counts the lines that report a failed decryption.

export interface CallEncryption {
  /** The call runs DAVE: what is said either way is end-to-end encrypted. */
  readonly encrypted: boolean;
  /** The bot holds the group's keys (always true in a call that is not encrypted). */
  readonly ready: boolean;
  readonly epoch: bigint | undefined;
  /** The voice privacy code of the current epoch, in groups of five digits as Discord shows it. */
  readonly privacyCode: string | undefined;
}

/** What members are told of the call's encryption: they compare the privacy code with their client's. */
export function callEncryptionNotice(
  state: CallEncryption,
): Notice<'voice.encryption.none' | 'voice.encryption.unsettled' | 'voice.encryption.code'> {
  if (!state.encrypted) return notice('voice.encryption.none');
  if (state.privacyCode === undefined) return notice('voice.encryption.unsettled');
  return notice('voice.encryption.code', { code: state.privacyCode });
}

interface MonitorEvents {
  change: [CallEncryption];
}

/** Members' frames failing this long with nothing heard: the bot rejoins the channel. */
export const REJOIN_AFTER_FAILING_MS = 5_000;
/** At most one rejoin in this long: a member whose own client is broken must not make the bot loop. */
const REJOIN_MIN_INTERVAL_MS = 60_000;
/** Failed decryptions are logged as a count at most this often. */
const SUMMARY_EVERY_MS = 10_000;

function daveOf(state: VoiceConnectionState): DAVESession | undefined {
  if (!('networking' in state)) return undefined;
  const networking = state.networking.state;
  return 'dave' in networking ? networking.dave : undefined;
}

/** 30 digits as Discord's client shows them: six groups of five. */
function grouped(code: string): string {
  return code.match(/.{1,5}/g)?.join(' ') ?? code;
}

/** The session's MLS epoch: davey has it, the library's types do not show it. */
function epochOf(session: object | undefined): bigint | undefined {
  const epoch: unknown = session && Reflect.get(session, 'epoch');
  if (typeof epoch === 'bigint') return epoch;
  return typeof epoch === 'number' ? BigInt(epoch) : undefined;
}

function readEncryption(dave: DAVESession | undefined): CallEncryption {
  if (!dave || dave.protocolVersion === 0) return { encrypted: false, ready: true, epoch: undefined, privacyCode: undefined };
  const session = dave.session;
  const ready = session?.ready === true && !dave.reinitializing;
  const code = ready ? dave.voicePrivacyCode : null;
  return { encrypted: true, ready, epoch: ready ? epochOf(session) : undefined, privacyCode: code ? grouped(code) : undefined };
}

export interface DecryptionCounts {
  /** Frames the library could not decrypt (it dropped them). */
  failed: number;
  /** Frames that arrived while the bot held no key for them (the listener dropped them). */
  withoutKey: number;
  /** Times the bot rebuilt the DAVE session for the library, and rejoined the channel. */
  recoveries: number;
  rejoins: number;
}

export class CallEncryptionMonitor extends EventEmitter<MonitorEvents> {
  readonly #connection: VoiceConnection;
  readonly #log: Logger;
  readonly #now: () => number;
  #dave: DAVESession | undefined;
  #current: CallEncryption;
  /** Since when frames fail with nothing heard; undefined while the bot hears people. */
  #failingSince: number | undefined;
  /** Library failures since the bot last heard someone. */
  #consecutiveFailures = 0;
  #lastRejoinAt = Number.NEGATIVE_INFINITY;
  readonly #totals: DecryptionCounts = { failed: 0, withoutKey: 0, recoveries: 0, rejoins: 0 };
  #logged = { failed: 0, withoutKey: 0 };
  readonly #summary: NodeJS.Timeout;
  readonly #onConnectionState = () => this.#refresh();
  readonly #onDaveDebug = (message: string) => this.#onDebug(message);
  readonly #onInvalidTransition = (transitionId: number) =>
    this.#log.warn('a DAVE transition failed; the voice library rebuilds its session and asks to be added again', {
      transitionId,
      ...this.#totals,
    });

  readonly #metrics: Pick<BotMetrics, 'voiceDecryptFailures'> | undefined;

  constructor(
    connection: VoiceConnection,
    options: { log: Logger; now?: () => number; metrics?: Pick<BotMetrics, 'voiceDecryptFailures'> | undefined },
  ) {
    super();
    this.#connection = connection;
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
    this.#metrics = options.metrics;
    this.#current = readEncryption(undefined);
    connection.on('stateChange', this.#onConnectionState);
    this.#summary = setInterval(() => this.#logFailures(), SUMMARY_EVERY_MS);
    this.#summary.unref();
    this.#refresh();
  }

  get state(): CallEncryption {
    return this.#current;
  }

  /** Whether what the bot plays would reach members encrypted (or the call is not encrypted). */
  get playable(): boolean {
    return this.#current.ready;
  }

  get counts(): DecryptionCounts {
    return { ...this.#totals };
  }

  get #countFields(): Record<string, number> {
    return { ...this.#totals };
  }

  /**
   * Resolves with the state once the bot holds the keys and the epoch's privacy code is known (the
   * library derives it when the epoch's transition executes), or as it is after `timeoutMs`.
   */
  async whenSettled(timeoutMs: number): Promise<CallEncryption> {
    const settled = (state: CallEncryption) => state.ready && (!state.encrypted || state.privacyCode !== undefined);
    if (settled(this.#current)) return this.#current;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.off('change', onChange);
        resolve(this.#current);
      };
      const onChange = (state: CallEncryption) => {
        if (settled(state)) done();
      };
      const timer = setTimeout(done, timeoutMs);
      this.on('change', onChange);
    });
  }

  /** Someone was heard: decryption works. */
  frameHeard(): void {
    this.#failingSince = undefined;
    this.#consecutiveFailures = 0;
  }

  /** A frame reached the listener still encrypted: the bot held no key for it. */
  frameWithoutKey(): void {
    this.#totals.withoutKey++;
    this.#metrics?.voiceDecryptFailures(1);
    this.#failing();
  }

  /**
   * A receive stream ended with an error. After failed decryptions that is the library giving up with
   * transition id 0 as its last (see above): the monitor rebuilds the session in its place.
   */
  receiveFailed(): void {
    const dave = this.#dave;
    if (!dave || this.#consecutiveFailures === 0 || dave.reinitializing || dave.protocolVersion === 0) return;
    this.#totals.recoveries++;
    this.#log.warn(
      'DAVE decryption kept failing and the voice library cannot recover from transition 0; rebuilding its session and asking to be added again',
      this.#countFields,
    );
    dave.recoverFromInvalidTransition(dave.lastTransitionId ?? 0);
  }

  stop(): void {
    clearInterval(this.#summary);
    this.#connection.off('stateChange', this.#onConnectionState);
    this.#attach(undefined);
    const { failed, withoutKey, recoveries, rejoins } = this.#totals;
    if (failed + withoutKey + recoveries + rejoins > 0) this.#log.info('voice decryption over the conversation', this.#countFields);
  }

  #onDebug(message: string): void {
    if (message.startsWith('Failed to decrypt')) {
      this.#totals.failed++;
      this.#metrics?.voiceDecryptFailures(1);
      this.#consecutiveFailures++;
      this.#failing();
      return;
    }
    this.#refresh();
  }

  #failing(): void {
    const now = this.#now();
    this.#failingSince ??= now;
    if (now - this.#failingSince < REJOIN_AFTER_FAILING_MS || now - this.#lastRejoinAt < REJOIN_MIN_INTERVAL_MS) return;
    this.#lastRejoinAt = now;
    this.#failingSince = undefined;
    this.#totals.rejoins++;
    this.#log.warn("members' voice has not decrypted for a while; rejoining the voice channel for a fresh DAVE session", {
      failingMs: REJOIN_AFTER_FAILING_MS,
      ...this.#totals,
    });
    this.#connection.rejoin();
  }

  /** Follows the connection to its current DAVE session and reads its state again. */
  #refresh(): void {
    this.#attach(daveOf(this.#connection.state));
    const previous = this.#current;
    const next = readEncryption(this.#dave);
    if (
      next.encrypted === previous.encrypted &&
      next.ready === previous.ready &&
      next.epoch === previous.epoch &&
      next.privacyCode === previous.privacyCode
    )
      return;
    this.#current = next;
    if (next.encrypted !== previous.encrypted) {
      this.#log.info(
        next.encrypted
          ? 'the voice call is end-to-end encrypted (DAVE)'
          : 'the voice call is not end-to-end encrypted (a member without DAVE, or DAVE is off)',
      );
    }
    if (next.epoch !== undefined && next.epoch !== previous.epoch)
      this.#log.info('DAVE epoch', { epoch: String(next.epoch), privacyCode: next.privacyCode });
    else if (next.encrypted && !next.ready && previous.ready)
      this.#log.info("the DAVE session is waiting for the group's keys; playback waits with it");
    this.emit('change', next);
  }

  #attach(dave: DAVESession | undefined): void {
    if (dave === this.#dave) return;
    this.#dave?.off('debug', this.#onDaveDebug);
    this.#dave?.off('invalidateTransition', this.#onInvalidTransition);
    this.#dave = dave;
    dave?.on('debug', this.#onDaveDebug);
    dave?.on('invalidateTransition', this.#onInvalidTransition);
  }

  #logFailures(): void {
    const failed = this.#totals.failed - this.#logged.failed;
    const withoutKey = this.#totals.withoutKey - this.#logged.withoutKey;
    if (failed === 0 && withoutKey === 0) return;
    this.#logged = { failed: this.#totals.failed, withoutKey: this.#totals.withoutKey };
    this.#log.warn('voice frames that could not be decrypted', {
      failed,
      withoutKey,
      windowMs: SUMMARY_EVERY_MS,
      total: this.#countFields,
      epoch: this.#current.epoch === undefined ? undefined : String(this.#current.epoch),
    });
  }
}
