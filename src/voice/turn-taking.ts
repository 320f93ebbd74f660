import type { RealtimeFunctionCall, RealtimeServerEvent } from '../gateway/realtime/events.ts';
import type { Logger } from '../lib/log.ts';
import type { AnnouncementSpeaker, VoiceFloor } from './announcement-speaker.ts';
import { FAILED_CALL_OUTPUT } from './function-calls.ts';
import { realtimeErrorMeaning, type RealtimeErrorEvent } from './realtime-errors.ts';
import type { VoiceSessionOptions } from './session-options.ts';
import type { LiveState } from './session-states.ts';
import type { SpeechPlayer, StoppedItem } from './speech-player.ts';
import { TurnSpeakers, type TurnMembers } from './turns.ts';
import { notice, type Notice } from '../wording/notice.ts';

// The conversation on a live realtime session: what the bot does with each server event. Members' turns
// are heard and answered (or, answering only when named, decided by their transcript), each transcript
// names who spoke its turn, answers are played and cut off when someone talks over them, the model's
// function calls run as the members who spoke the turn answered, and the gateway's errors are routine or
// posted. The state of each concern is the live state's (session-states.ts); the session itself, its
// transitions and its audio are session.ts's.

/** What turn-taking needs of the voice session. */
export interface TurnTakingHost {
  /** The session's state, the members and the bot's voice (a renewal or a loss replaces the live state). */
  floor: VoiceFloor;
  /** The bot ends turns itself: Discord turn detection, or answering only when named. */
  manual(): boolean;
  /** Only turns that name the bot are answered. */
  onlyWhenNamed(): boolean;
  player: Pick<SpeechPlayer, 'append' | 'end' | 'stop' | 'speaking'>;
  announcer: Pick<AnnouncementSpeaker, 'speakNext' | 'refused'>;
  options: Pick<VoiceSessionOptions, 'onActivity' | 'onTranscript' | 'addressed' | 'onFunctionCall'>;
  /** Posts a problem in the text channel (at most once a minute the same). */
  postProblem(problem: Notice): void;
  log: Logger;
}

export class TurnTaking {
  readonly #host: TurnTakingHost;
  readonly #log: Logger;
  /** Who spoke each turn, across realtime sessions. */
  readonly #speakers = new TurnSpeakers();
  /** Who spoke the turn the bot answers now (or last): its function calls run as them. */
  #answering: TurnMembers = [];

  constructor(host: TurnTakingHost) {
    this.#host = host;
    this.#log = host.log;
  }

  /** A member's audio packet arrived: it counts towards who spoke the turn. */
  packet(userId: string): void {
    this.#speakers.packet(userId);
  }

  handle(live: LiveState, event: RealtimeServerEvent): void {
    const { player, options } = this.#host;
    switch (event.type) {
      case 'input_audio_buffer.speech_started':
        live.turns.heard();
        options.onActivity?.();
        this.bargeIn();
        break;
      case 'response.created':
        live.turns.settled();
        live.responses.created();
        live.announcements.responseStarted(event.responseId);
        live.answers.responseCreated(event.responseId);
        break;
      case 'input_audio_buffer.committed':
        live.turns.heard();
        live.answers.turnCommitted();
        // With server VAD the gateway ends turns (and answers each); the bot's own commits took their members already.
        if (this.#host.manual()) {
          live.turns.committed(event.itemId);
        } else {
          this.#answering = this.#turnEnded(live);
          live.turns.committed(event.itemId, this.#answering);
        }
        break;
      case 'response.output_item.added':
      case 'conversation.item.created':
        live.answers.itemAdded(event.type === 'response.output_item.added' ? event.responseId : undefined, event.itemId, event.role);
        // The model's output (an answer, a call) holds what the members it answers said: forgetting them deletes it too.
        if (event.itemId !== undefined && (event.type === 'response.output_item.added' || event.role === 'assistant'))
          live.turns.owned(event.itemId, this.#answering);
        break;
      case 'response.output_audio.delta': {
        const stream = live.answers.audio(event);
        if (!stream) break;
        player.append(stream.key, event.audio);
        options.onActivity?.();
        break;
      }
      case 'response.output_audio.done': {
        const key = live.answers.audioDone(event);
        if (key !== undefined) player.end(key);
        break;
      }
      case 'response.done':
        // A member's answer that was refused goes before any announcement.
        if (live.responses.done() && live.responses.retryWaiting) this.#retryResponse(live);
        for (const key of live.answers.responseDone(event.responseId)) player.end(key);
        // A call the item events never announced is read from the response's output.
        for (const call of event.functionCalls) this.#functionCall(live, call, event.status);
        break;
      case 'response.function_call_arguments.done':
        this.#functionCall(live, event.call, undefined);
        break;
      case 'conversation.item.input_audio_transcription.completed':
        this.#transcribed(live, event.itemId, event.transcript);
        break;
      case 'response.output_audio_transcript.done':
        if (event.transcript) {
          const aside = live.announcements.isAside(event.responseId);
          options.onTranscript?.({ speaker: 'bot', text: event.transcript, aside, answering: aside ? [] : this.#answering });
        }
        break;
      case 'error':
        this.#realtimeError(live, event);
        break;
      default:
        break;
    }
    // Any event may leave room for a waiting announcement (a response ended, a turn was not answered…).
    this.#host.announcer.speakNext();
  }

  /**
   * Someone talks over the bot: silence at once, cancel the answer, and keep only what was heard. The
   * cancel goes out even when response.done has come: a fast provider delivers a whole answer long
   * before it has been played, and a gateway still generating must stop (if nothing was left to cancel,
   * its error is routine). Late deltas of what was cut off are dropped (AnswerStreams).
   */
  bargeIn(): void {
    // Only a live session has answers playing: leaving live stops them.
    if (this.#host.floor.state().status !== 'live' || !this.#host.player.speaking) return;
    this.cutOff(this.#host.player.stop(), 'barge-in');
  }

  /** Answers stopped before their end: cancel what is still coming, and keep only what was heard. */
  cutOff(stopped: StoppedItem[], why = 'not heard'): void {
    const live = this.#host.floor.state();
    if (live.status !== 'live') return;
    live.client.cancelResponse();
    for (const { key, playedMs } of stopped) {
      const answer = live.answers.cutOff(key);
      // Only a real item id can be truncated; an answer whose item the server never named is just cancelled.
      if (answer?.itemId !== undefined) live.client.truncate(answer.itemId, answer.contentIndex, playedMs);
      this.#log.info(why, { item: answer?.itemId, playedMs });
    }
  }

  /** Everyone stopped speaking, with the bot ending turns itself: the turn is committed, and answered unless its transcript decides. */
  endManualTurn(): void {
    const live = this.#host.floor.state();
    if (live.status !== 'live' || this.#host.floor.memberSpeaking()) return;
    live.client.commit();
    const members = this.#turnEnded(live);
    live.turns.ended(members);
    live.turns.heard();
    // Answering only when named: the transcript decides (#transcribed); the turn joins the context either way.
    if (this.#host.onlyWhenNamed()) {
      live.turns.awaitTranscript();
    } else {
      this.#answering = members;
      this.#requestResponse(live);
    }
  }

  /** Routine errors go to the log (a refusal for an active response is asked again); news is posted in the channel. */
  #realtimeError(live: LiveState, event: RealtimeErrorEvent): void {
    const meaning = realtimeErrorMeaning(event);
    if (meaning === 'session-limit') live.lifetime.noticeLimit();
    if (meaning === 'active-response') {
      this.#refusedForActiveResponse(live, event);
    } else if (meaning !== 'news') {
      this.#log.debug('realtime notice', { code: event.code, message: event.message, answers: event.clientEventType });
    } else {
      this.#log.warn('realtime error event', {
        code: event.code,
        message: event.message,
        param: event.param,
        answers: event.clientEventType,
      });
      this.#host.postProblem(notice('voice.problem.reported', { message: event.message }));
    }
    // An announcement the gateway answered with another error is not waited for (nor said again).
    live.announcements.answeredWithError(event.clientEventId);
    // A commit refused (nothing to commit) makes no item: the next confirmation is another turn's.
    if (event.clientEventType === 'input_audio_buffer.commit') live.turns.commitRefused();
  }

  /**
   * The gateway refused a response because another was active: an announcement goes back to the front of
   * its line, a response.create is sent again; both once that response ends (its response.done), or, when
   * the bot saw no response start (a server that says nothing of it, or its events still in flight), after
   * a backoff. Each is given up after a few refusals in a row. Never news for the channel.
   */
  #refusedForActiveResponse(live: LiveState, event: RealtimeErrorEvent): void {
    const eventId = event.clientEventId ?? live.announcements.inFlightEventId;
    const announcement = eventId === undefined ? undefined : live.announcements.takeRefused(eventId);
    if (announcement) {
      const again = this.#host.announcer.refused(announcement);
      this.#log.info('the gateway refused a voice announcement while a response was active', { again, refusals: announcement.refusals });
      if (again && !live.responses.open) live.responses.holdAfterRefusal(announcement.refusals);
      return;
    }
    if (event.clientEventType !== 'response.create') {
      this.#log.info('the gateway refused an event while a response was active', { code: event.code, answers: event.clientEventType });
      return;
    }
    const { refusals, givenUp } = live.responses.createRefused(() => this.#retryResponse(live));
    if (givenUp) {
      this.#log.warn('response.create was refused too often for an active response; the turn goes unanswered', { refusals });
      live.turns.settled();
      return;
    }
    this.#log.info('the gateway refused response.create while a response was active; asking again once it ends', { refusals });
  }

  /** Sends a refused response.create again. */
  #retryResponse(live: LiveState): void {
    if (this.#host.floor.state() !== live || !live.responses.takeRetry()) return;
    this.#requestResponse(live);
  }

  /** Asks the gateway to answer: the turn (or the function's output) waits for its answer until response.created. */
  #requestResponse(live: LiveState): void {
    live.turns.heard();
    live.client.createResponse();
  }

  /** A turn ended: who spoke it, and a fresh turn for function calls. */
  #turnEnded(live: LiveState): TurnMembers {
    live.calls.turnEnded();
    // The new turn is answered instead of one whose response.create was refused (a barge-in would cut it anyway).
    live.responses.dropRetry();
    return this.#speakers.turnEnded();
  }

  /**
   * A user turn's transcript, naming who spoke it: answered when the bot answers everything, or when it
   * names the bot. A transcript of an item the session never confirmed committed (a gateway that names
   * no items) is the last turn's.
   */
  #transcribed(live: LiveState, itemId: string | undefined, transcript: string): void {
    const { options } = this.#host;
    const members = live.turns.takeMembers(itemId) ?? this.#speakers.lastTurn;
    let answered = true;
    if (live.turns.transcriptDecides()) {
      answered = options.addressed?.(transcript) ?? true;
      if (answered) {
        this.#answering = members;
        this.#requestResponse(live);
      } else {
        live.turns.settled();
        this.#log.debug('a turn that does not name the bot: heard, not answered');
      }
    }
    if (transcript) options.onTranscript?.({ speaker: 'user', members, text: transcript, answered });
  }

  /**
   * A function call of the model, from its arguments' done event or from response.done (whichever comes
   * first; the other is the same call). Its output (function-calls.ts decides it) goes to the session
   * the call came on, and the model is asked to answer with it, unless the member spoke over the call.
   */
  #functionCall(live: LiveState, call: RealtimeFunctionCall, responseStatus: string | undefined): void {
    if (!live.calls.firstSeen(call.callId)) return;
    const onFunctionCall = this.#host.options.onFunctionCall;
    if (!onFunctionCall) return;
    const cutOff = responseStatus === 'cancelled' || live.answers.isCutOff(call.responseId, call.itemId);
    const output = live.calls.outputFor(call, cutOff, () => {
      this.#log.info('function call', { name: call.name, call: call.callId });
      return onFunctionCall({ ...call, speakerIds: this.#answering }).catch((error: unknown) => {
        this.#log.error('a function call failed', { name: call.name, error });
        return FAILED_CALL_OUTPUT;
      });
    });
    live.calls.started();
    void output.then((text) => {
      live.calls.finished();
      // A session renewed or lost meanwhile has no call to answer: the new one never saw it.
      if (this.#host.floor.state() !== live) {
        this.#log.info('a function call finished after its realtime session ended; its output is dropped', { name: call.name });
        return;
      }
      live.client.sendFunctionOutput(call.callId, text);
      // Cut off: the member's new turn is answered anyway; the output only keeps the context honest.
      if (!cutOff) this.#requestResponse(live);
      this.#host.announcer.speakNext();
    });
  }
}
