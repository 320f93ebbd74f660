import type { RealtimeSession } from '../../src/emulator/realtime/session.ts';

// What a test reads of a realtime session on the emulator about what was said: the lines the bot had it
// say as they are (force_message), and the text messages its conversation holds (the context a session
// was given); and a scripted user turn, through the emulator's HTTP endpoint.

/** The texts of the force_message items the client sent on `session`, in order. */
export function forcedLines(session: RealtimeSession): string[] {
  return session.clientEvents.flatMap(({ event }) => {
    if (event.type !== 'conversation.item.create') return [];
    const item = event.item as { type?: unknown; content?: { text?: unknown }[] } | undefined;
    return item?.type === 'force_message' ? [String(item.content?.[0]?.text)] : [];
  });
}

/** The message items of `session`'s conversation that carry text (history a client wrote), oldest first. */
export function textMessages(session: RealtimeSession): { role: string; text: string }[] {
  return session.items.flatMap((item) => {
    if (item.type !== 'message' || !Array.isArray(item.content)) return [];
    const part: unknown = item.content[0];
    const text = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
    return typeof text === 'string' ? [{ role: String(item.role), text }] : [];
  });
}

/** Scripts `session`'s next user turn: heard as `transcript`, answered with `answer` (a tone as long as its text). */
export async function scriptTurn(emulatorBaseUrl: string, session: RealtimeSession, transcript: string, answer: string): Promise<void> {
  const response = await fetch(`${emulatorBaseUrl}/_emulator/realtime/script`, {
    method: 'POST',
    headers: { authorization: 'Bearer emulator-key', 'content-type': 'application/json' },
    body: JSON.stringify({ session_id: session.id, transcript, response: { text: answer } }),
  });
  if (response.status !== 200) throw new Error(`the emulator refused the script: ${response.status} ${await response.text()}`);
}
