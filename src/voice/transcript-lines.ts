import { z } from 'zod';
import { versionedRecord, type Collection } from '../store/index.ts';

// Which of the bot's transcript messages hold whose words: kept per member, so that a member who asks to be
// forgotten (or leaves the server) has theirs found without reading threads back. Bounded: the newest
// MAX_LINES_PER_MEMBER lines of each member, each member's record expiring LINES_TTL_MS after their last line.

/** The store collection, keyed by `<guild id>:<user id>`. */
export const TRANSCRIPT_LINES = 'voice_transcript_lines';
/** A member's lines remembered, at most: the newest; a chatty member's oldest lines are no longer found. */
export const MAX_LINES_PER_MEMBER = 500;
/** A member's record of lines lives this long after it last changed, a line posted or left out (the README's "Privacy" says so). */
export const LINES_TTL_MS = 30 * 24 * 60 * 60_000;

/** One line of a transcript, posted as one message or several (a long turn), and whose words it holds. */
export interface IndexedLine {
  threadId: string;
  messageIds: string[];
  /**
   * `turn`: a member's turn, `members` everyone who spoke it (forgetting one of several edits it to leave
   * them out); `answer`: the bot's line answering the turn of `members` (it may repeat their words: it goes).
   */
  kind: 'turn' | 'answer';
  members: string[];
  /** A member's line says whether the bot answered it; kept to word it again when it is edited. */
  answered: 'yes' | 'no' | 'none';
}

const LINES_VERSION = 1;

export interface MemberLines {
  v: typeof LINES_VERSION;
  lines: IndexedLine[];
}

export const parseMemberLines = versionedRecord<MemberLines>({
  name: 'transcript lines',
  version: LINES_VERSION,
  schema: z.object({
    v: z.literal(LINES_VERSION),
    lines: z.array(
      z.object({
        threadId: z.string(),
        messageIds: z.array(z.string()),
        kind: z.enum(['turn', 'answer']),
        members: z.array(z.string()),
        answered: z.enum(['yes', 'no', 'none']),
      }),
    ),
  }),
  // No older version: the first one written.
  upgrade: (stored) => stored,
});

export type TranscriptLines = Collection<MemberLines>;

function keyOf(guildId: string, userId: string): string {
  return `${guildId}:${userId}`;
}

/** Remembers a posted line for each member whose words it holds. */
export async function rememberLine(lines: TranscriptLines, guildId: string, line: IndexedLine): Promise<void> {
  await Promise.all(
    [...new Set(line.members)].map((userId) =>
      lines.update(
        keyOf(guildId, userId),
        (current) => ({ v: LINES_VERSION, lines: [...(current?.lines ?? []), line].slice(-MAX_LINES_PER_MEMBER) }),
        LINES_TTL_MS,
      ),
    ),
  );
}

/** The lines of `userId`'s words in the server, no longer remembered for them. */
export async function takeLines(lines: TranscriptLines, guildId: string, userId: string): Promise<IndexedLine[]> {
  const key = keyOf(guildId, userId);
  const found = (await lines.get(key))?.lines ?? [];
  await lines.delete(key);
  return found;
}

/**
 * A line shared with `userId` now leaves them out: the other members' records of it say so, so that a later
 * edit (another of them forgotten) does not name them again.
 */
export async function leftOut(lines: TranscriptLines, guildId: string, line: IndexedLine, userId: string): Promise<void> {
  const first = line.messageIds[0];
  await Promise.all(
    line.members
      .filter((member) => member !== userId)
      .map((member) =>
        lines.update(
          keyOf(guildId, member),
          (current) => {
            if (!current) return undefined;
            const kept = current.lines.map((each) =>
              each.messageIds[0] === first ? { ...each, members: each.members.filter((other) => other !== userId) } : each,
            );
            return { ...current, lines: kept };
          },
          LINES_TTL_MS,
        ),
      ),
  );
}
