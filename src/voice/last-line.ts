import type { RealtimeServerEvent } from '../gateway/realtime/events.ts';
import type { Logger } from '../lib/log.ts';
import { waitUntil } from '../lib/wait-until.ts';
import { forcedMessageWaitsFor, type VoiceFloor } from './announcement-speaker.ts';
import type { LiveState } from './session-states.ts';

export interface LastLineOptions {
  floor: VoiceFloor;
  /** Subscribes `wake` to the conversation's own news (an answer played, a change of state); returns the unsubscribe. */
  onConversationNews(wake: () => void): () => void;
  log: Logger;
}

/**
 * Speaks a last line on the live session `live`, not to be talked over, and resolves once it was heard: a
 * response that began after it is done and nothing is left to play. Resolves anyway after `timeoutMs`,
 * or at once when `live` is not the session any more: a goodbye never keeps the bot in the channel.
 */
export async function speakLastLine(
  live: LiveState,
  line: { text: string; aside: boolean },
  timeoutMs: number,
  options: LastLineOptions,
): Promise<void> {
  const { floor, log } = options;
  const client = live.client;
  const until = Date.now() + timeoutMs;
  let begun = false;
  let done = false;
  const follow = (event: RealtimeServerEvent) => {
    if (event.type === 'response.created') begun = true;
    else if (event.type === 'response.done' && begun) done = true;
  };
  const wakeOn = (wake: () => void) => {
    client.on('event', wake);
    const unsubscribe = options.onConversationNews(wake);
    return () => {
      client.off('event', wake);
      unsubscribe();
    };
  };
  try {
    // A forced message during another response is refused by the gateway: the answer under way (or an
    // announcement sent and not yet begun) ends first. A member's turn does not hold the last line back.
    await waitUntil({
      check: () => (floor.state() !== live || forcedMessageWaitsFor(live, floor, Date.now()) === undefined ? true : undefined),
      subscribe: wakeOn,
      timeoutMs: Math.max(0, until - Date.now()),
      timeoutError: () => new Error(`the answer under way did not end within ${timeoutMs} ms`),
    });
    if (floor.state() !== live) return;
    client.on('event', follow);
    const eventId = client.forceMessage(line.text, { interruptible: false });
    if (eventId !== undefined) live.announcements.lastLineSent(eventId, Date.now(), line.aside);
    await waitUntil({
      check: () => (floor.state() !== live || (done && !floor.answerPlaying()) ? true : undefined),
      subscribe: wakeOn,
      timeoutMs: Math.max(0, until - Date.now()),
      timeoutError: () => new Error(`the last line was not heard within ${timeoutMs} ms`),
    });
  } catch (error) {
    log.warn('leaving without the last line heard', { error });
  } finally {
    client.off('event', follow);
  }
}
